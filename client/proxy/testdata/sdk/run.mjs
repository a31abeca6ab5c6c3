// Drives the official SDKs against orionctl proxy, as an agent would:
// node run.mjs MODE, with PROXY_URL set. Prints one JSON object: what the
// SDK made of the response.
import OpenAI from "openai";
import Anthropic from "@anthropic-ai/sdk";

const base = process.env.PROXY_URL;
const mode = process.argv[2];
const tools = [{ type: "function", function: { name: "bash", description: "run a command", parameters: { type: "object", properties: { cmd: { type: "string" } } } } }];
const messages = [{ role: "user", content: "write the file" }];

async function main() {
  switch (mode) {
    case "openai-stream": {
      const client = new OpenAI({ baseURL: base + "/v1", apiKey: "sk-dummy", maxRetries: 0 });
      const stream = await client.chat.completions.create({
        model: "fake-model", messages, tools, stream: true, stream_options: { include_usage: true },
      });
      let text = "", finish = null, usage = null, chunks = 0;
      const calls = [];
      for await (const chunk of stream) {
        chunks++;
        if (chunk.usage) usage = chunk.usage;
        const c = chunk.choices[0];
        if (!c) continue;
        if (c.delta?.content) text += c.delta.content;
        for (const tc of c.delta?.tool_calls ?? []) {
          calls[tc.index] ??= { name: "", arguments: "" };
          if (tc.function?.name) calls[tc.index].name += tc.function.name;
          if (tc.function?.arguments) calls[tc.index].arguments += tc.function.arguments;
        }
        if (c.finish_reason) finish = c.finish_reason;
      }
      return { text, finish, calls, usage, chunks };
    }
    case "openai-create": {
      const client = new OpenAI({ baseURL: base + "/v1", apiKey: "sk-dummy", maxRetries: 0 });
      const r = await client.chat.completions.create({ model: "fake-model", messages, tools });
      const m = r.choices[0].message;
      return { text: m.content, finish: r.choices[0].finish_reason, calls: (m.tool_calls ?? []).map((c) => c.function), usage: r.usage };
    }
    case "openai-error":
    case "openai-error-retrying": {
      // -retrying: the SDK's default retries, to show what it does with
      // the answer (x-should-retry).
      const client = new OpenAI({ baseURL: base + "/v1", apiKey: "sk-dummy", ...(mode === "openai-error" ? { maxRetries: 0 } : {}) });
      try {
        await client.chat.completions.create({ model: "fake-model", messages, tools });
        return { error: null };
      } catch (e) {
        return { error: e.constructor.name, status: e.status, message: e.message };
      }
    }
    case "anthropic-stream": {
      const client = new Anthropic({ baseURL: base, apiKey: "sk-ant-dummy", maxRetries: 0 });
      const stream = client.messages.stream({
        model: "claude-fake", max_tokens: 1024, messages,
        tools: [{ name: "Bash", description: "run a command", input_schema: { type: "object", properties: { command: { type: "string" } } } }],
      });
      let streamed = "";
      stream.on("text", (t) => { streamed += t; });
      const m = await stream.finalMessage();
      return {
        streamed,
        text: m.content.filter((b) => b.type === "text").map((b) => b.text).join(""),
        calls: m.content.filter((b) => b.type === "tool_use").map((b) => ({ name: b.name, input: b.input })),
        finish: m.stop_reason, usage: m.usage,
      };
    }
    case "anthropic-create": {
      const client = new Anthropic({ baseURL: base, apiKey: "sk-ant-dummy", maxRetries: 0 });
      const m = await client.messages.create({ model: "claude-fake", max_tokens: 1024, messages });
      return { text: m.content.filter((b) => b.type === "text").map((b) => b.text).join(""), finish: m.stop_reason, usage: m.usage };
    }
    case "anthropic-error":
    case "anthropic-error-retrying": {
      const client = new Anthropic({ baseURL: base, apiKey: "sk-ant-dummy", ...(mode === "anthropic-error" ? { maxRetries: 0 } : {}) });
      try {
        await client.messages.create({ model: "claude-fake", max_tokens: 1024, messages });
        return { error: null };
      } catch (e) {
        return { error: e.constructor.name, status: e.status, message: e.message };
      }
    }
  }
  throw new Error("unknown mode " + mode);
}

main().then(
  (r) => { process.stdout.write(JSON.stringify(r) + "\n"); },
  (e) => { process.stdout.write(JSON.stringify({ thrown: String(e?.stack ?? e) }) + "\n"); process.exit(1); },
);
