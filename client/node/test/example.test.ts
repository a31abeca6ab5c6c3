// The README's example agent runs as written, against a recorded stream
// instead of a model, and exits once it is done (no connection left open).
import * as assert from "node:assert/strict";
import { execFile } from "node:child_process";
import * as fs from "node:fs";
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
    delete env.DEEPSEEK_API_KEY;
    const { stdout } = await promisify(execFile)(process.execPath, [agent, "--replay", stream], { cwd: d.root, env, timeout: 30_000 });
    assert.match(stdout, /^wrote .*notes\.md \(overwrite\): 5 lines, \d+ bytes, sha256 [0-9a-f]{64}\nThat's all\.\n$/);
    assert.ok(fs.readFileSync(path.join(d.root, "notes.md"), "utf8").startsWith("- one\n- two\n"));
  } finally {
    await d.stop();
  }
});
