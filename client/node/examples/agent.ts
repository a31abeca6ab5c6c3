// The agent backend of the README, runnable once built (npm run build):
//
//   DEEPSEEK_API_KEY=... node dist/examples/agent.js "Write NOTES.md: a tour of this repository."
//   node dist/examples/agent.js --replay ../testdata/streams/marker_split.sse
//
// The first asks the model; the second plays a recorded response instead
// (no API key: the {{marker}} placeholders get the live session's marker).
// Both write into the current directory, through oriond at $ORION_SOCKET
// (or the default socket).
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
      await ctl.run(replayFile !== undefined ? fs.createReadStream(replayFile) : await ask(tools, messages)); // one streamed response
      for (const e of events) if (e.type === "text" || e.type === "finalized") console.log(e.text);
      const next = turnMessages(events);
      messages.push(...next);
      more = replayFile === undefined && next.length > 1; // tool results or prompts to send back
    }
    await ctl.finish();
  } finally {
    ctl.close();
  }
}

async function ask(tools: unknown, messages: object[]): Promise<Readable> {
  const key = process.env.DEEPSEEK_API_KEY;
  if (!key) throw new Error("DEEPSEEK_API_KEY is not set; run with --replay FILE to play a recorded response instead");
  const res = await fetch("https://api.deepseek.com/chat/completions", {
    method: "POST",
    headers: { "Content-Type": "application/json", Authorization: `Bearer ${key}` },
    body: JSON.stringify({ model: "deepseek-chat", stream: true, tools, messages }),
  });
  if (!res.ok || !res.body) throw new Error(`the model's API answered ${res.status} ${res.statusText}`);
  return Readable.fromWeb(res.body as never);
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
