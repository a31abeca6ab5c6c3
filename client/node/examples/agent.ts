// The agent backend of the README, runnable once built (npm run build):
//
//   OPENAI_API_KEY=... node dist/examples/agent.js "Write NOTES.md: a tour of this repository."
//   OPENAI_BASE_URL=https://api.deepseek.com OPENAI_MODEL=deepseek-chat OPENAI_API_KEY=... node dist/examples/agent.js "…"
//   OPENAI_BASE_URL=http://127.0.0.1:11434/v1 OPENAI_MODEL=qwen3 node dist/examples/agent.js "…"   (a local server, no key)
//   node dist/examples/agent.js --replay ../testdata/streams/marker_split.sse
//
// The first three ask a model through any OpenAI-compatible chat-completions
// API: OPENAI_BASE_URL (default https://api.openai.com/v1), OPENAI_API_KEY
// (sent as a bearer token when set) and OPENAI_MODEL (default gpt-4.1-mini).
// The last plays a recorded response instead (no API key: the {{marker}}
// placeholders get the live session's marker). All write into the current
// directory, through oriond at $ORION_SOCKET (or the default socket).
//
// A model that declines answers with a refusal (delta.refusal in the
// stream) instead of content: it is printed, not dropped, and so are the
// writes oriond refused, which the model is told about too.
import * as fs from "node:fs";
import { Readable } from "node:stream";
import { Event, OrionClient, StreamController, turnMessages } from "../src";

export async function agent(task: string, replayFile?: string): Promise<void> {
  const client = await OrionClient.connect();
  const tools = await client.toolDefinitions(); // WritePlanTool_begin
  client.close();
  let events: Event[] = [];
  const ctl = await StreamController.create({ workspaceRoot: process.cwd(), onEvent: (e) => events.push(e), replay: replayFile !== undefined });
  const messages: object[] = [{ role: "user", content: task }];
  try {
    for (let more = true; more; events = []) {
      const body = replayFile !== undefined ? (Readable.toWeb(fs.createReadStream(replayFile)) as ReadableStream<Uint8Array>) : await ask(tools, messages);
      const [forController, forRefusal] = body.tee();
      const refusal = refusalOf(forRefusal);
      await ctl.run(Readable.fromWeb(forController as never)); // one streamed response
      for (const e of events) {
        if (e.type === "text" || e.type === "finalized") console.log(e.text);
        else if (e.type === "error" || e.type === "conflict") console.error(`not written: ${e.error?.message ?? e.text ?? ""}`);
      }
      const refused = await refusal;
      if (refused !== "") console.log(`the model refused: ${refused}`);
      const next = turnMessages(events);
      messages.push(...next);
      more = replayFile === undefined && next.length > 1; // tool results or prompts to send back
    }
    await ctl.finish();
  } finally {
    ctl.close();
  }
}

/** ask sends the conversation to the model and returns its streamed answer. */
async function ask(tools: unknown, messages: object[]): Promise<ReadableStream<Uint8Array>> {
  const base = (process.env.OPENAI_BASE_URL || "https://api.openai.com/v1").replace(/\/+$/, "");
  const key = process.env.OPENAI_API_KEY;
  const model = process.env.OPENAI_MODEL || "gpt-4.1-mini";
  const res = await fetch(`${base}/chat/completions`, {
    method: "POST",
    headers: { "Content-Type": "application/json", ...(key ? { Authorization: `Bearer ${key}` } : {}) },
    body: JSON.stringify({ model, stream: true, tools, messages }),
  });
  if (!res.ok || !res.body) {
    const detail = (await res.text().catch(() => "")).slice(0, 500);
    const hint = key ? "" : " (OPENAI_API_KEY is not set)";
    throw new Error(`${base}/chat/completions answered ${res.status} ${res.statusText}${hint}: ${detail}`);
  }
  return res.body;
}

/**
 * refusalOf collects the refusal text of a streamed chat completion: the
 * delta.refusal fragments a model sends, instead of content, when it
 * declines. The controller reads the content and the tool calls only.
 */
export async function refusalOf(stream: ReadableStream<Uint8Array>): Promise<string> {
  let refusal = "";
  for (const line of (await new Response(stream).text()).split("\n")) {
    if (!line.startsWith("data:")) continue;
    try {
      refusal += JSON.parse(line.slice(5)).choices?.[0]?.delta?.refusal ?? "";
    } catch {
      // [DONE], or an event the controller reports itself
    }
  }
  return refusal;
}

if (require.main === module) {
  const args = process.argv.slice(2);
  const i = args.indexOf("--replay");
  const replayFile = i >= 0 ? args[i + 1] : undefined;
  const task = args.filter((_, j) => j !== i && j !== i + 1).join(" ") || "Write NOTES.md: a short tour of this repository.";
  if (i >= 0 && replayFile === undefined) {
    console.error("usage: agent.js [TASK] [--replay FILE.sse]");
    process.exit(2);
  }
  agent(task, replayFile).then(
    () => process.exit(0),
    (err: unknown) => {
      console.error(`agent: ${err instanceof Error ? err.message : String(err)}`);
      process.exit(1);
    },
  );
}
