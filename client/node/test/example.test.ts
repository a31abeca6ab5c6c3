// The README's example agent runs as written, against a recorded stream
// instead of a model, and exits once it is done (no connection left open).
import * as assert from "node:assert/strict";
import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as http from "node:http";
import type { AddressInfo } from "node:net";
import * as path from "node:path";
import { test } from "node:test";
import { promisify } from "node:util";

import { startDaemon } from "./daemon";

test("examples/agent.js --replay writes the recorded file and exits", async () => {
  const d = await startDaemon();
  try {
    const agent = path.resolve(__dirname, "../examples/agent.js");
    const stream = path.resolve(__dirname, "../../../testdata/streams/marker_split.sse");
    const env: NodeJS.ProcessEnv = { ...process.env, ORION_SOCKET: d.socket };
    const { stdout } = await promisify(execFile)(process.execPath, [agent, "--replay", stream], { cwd: d.root, env, timeout: 30_000 });
    assert.match(stdout, /^wrote .*notes\.md \(overwrite\): 5 lines, \d+ bytes, sha256 [0-9a-f]{64}\nThat's all\.\n$/);
    assert.ok(fs.readFileSync(path.join(d.root, "notes.md"), "utf8").startsWith("- one\n- two\n"));
  } finally {
    await d.stop();
  }
});

/** sse is a chat-completions stream of these deltas, as a server sends it. */
function sse(...deltas: object[]): string {
  const chunks = deltas.map((delta, i) =>
    JSON.stringify({ id: "c1", object: "chat.completion.chunk", choices: [{ index: 0, delta, finish_reason: i === deltas.length - 1 ? "stop" : null }] }),
  );
  return chunks.map((c) => `data: ${c}\n\n`).join("") + "data: [DONE]\n\n";
}

const refusalStream = sse({ role: "assistant", content: null, refusal: "" }, { refusal: "I can't help " }, { refusal: "with that." });

test("examples/agent.js shows the model's refusal", async () => {
  const d = await startDaemon();
  try {
    const agent = path.resolve(__dirname, "../examples/agent.js");
    const stream = path.join(d.root, "refusal.sse");
    fs.writeFileSync(stream, refusalStream);
    const env: NodeJS.ProcessEnv = { ...process.env, ORION_SOCKET: d.socket };
    const { stdout } = await promisify(execFile)(process.execPath, [agent, "--replay", stream], { cwd: d.root, env, timeout: 30_000 });
    assert.match(stdout, /^the model refused: I can't help with that\.\n$/m);
  } finally {
    await d.stop();
  }
});

test("examples/agent.js asks any OpenAI-compatible API from the environment", async () => {
  const d = await startDaemon();
  const seen: { url?: string; auth?: string; body?: { model?: string; stream?: boolean; tools?: unknown[] } }[] = [];
  const server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString()));
    req.on("end", () => {
      seen.push({ url: req.url, auth: req.headers.authorization, body: JSON.parse(body) });
      res.writeHead(200, { "Content-Type": "text/event-stream" });
      res.end(seen.length === 1 ? sse({ role: "assistant", content: "Hello from the local model." }) : refusalStream);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  try {
    const { port } = server.address() as AddressInfo;
    const agent = path.resolve(__dirname, "../examples/agent.js");
    const env: NodeJS.ProcessEnv = {
      ...process.env, ORION_SOCKET: d.socket, OPENAI_BASE_URL: `http://127.0.0.1:${port}/v1/`, OPENAI_API_KEY: "sk-local", OPENAI_MODEL: "local-model",
    };
    const run = promisify(execFile);
    const first = await run(process.execPath, [agent, "say hello"], { cwd: d.root, env, timeout: 30_000 });
    assert.equal(first.stdout, "Hello from the local model.\n");
    assert.equal(seen[0].url, "/v1/chat/completions");
    assert.equal(seen[0].auth, "Bearer sk-local");
    assert.equal(seen[0].body?.model, "local-model");
    assert.equal(seen[0].body?.stream, true);
    assert.ok(Array.isArray(seen[0].body?.tools) && seen[0].body.tools.length > 0, "the request offers WritePlanTool_begin");

    // Without a key (a local server needs none), no Authorization header.
    delete env.OPENAI_API_KEY;
    const second = await run(process.execPath, [agent, "write something harmful"], { cwd: d.root, env, timeout: 30_000 });
    assert.equal(second.stdout, "the model refused: I can't help with that.\n");
    assert.equal(seen[1].auth, undefined);
  } finally {
    server.close();
    await d.stop();
  }
});
