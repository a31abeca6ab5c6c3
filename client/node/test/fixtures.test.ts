// Runs the recorded streams shared with the Go suite
// (client/testdata/streams) against the real oriond and compares the events
// and files with the same expected outputs. The harness settings, the
// directives and the normalization are those of
// client/controller/fixtures_test.go; see the README next to the fixtures.
import * as assert from "node:assert/strict";
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { test } from "node:test";

import { Event, OrionClient, StreamController } from "../src";
import { Daemon, startDaemon } from "./daemon";

const streamsDir = path.resolve(__dirname, "../../../testdata/streams");

async function runFixture(d: Daemon, stream: string): Promise<{ events: Event[]; dials: number }> {
  const events: Event[] = [];
  let dials = 0;
  let cur: OrionClient | undefined;
  const ctl = await StreamController.create({
    socket: d.socket,
    workspaceRoot: d.root,
    idleMs: 1500,
    autoFinalizeMs: 6000,
    chunkBytes: 256,
    flushAfterMs: 3_600_000,
    replay: true,
    connect: async (socket) => {
      cur = await OrionClient.connect({ socket });
      dials++;
      return cur;
    },
    onEvent: (e) => events.push(e),
    onComment: async (text) => {
      if (text === "orion-test drop-connection") cur?.close();
      if (text === "orion-test restart-daemon") await d.restart();
      if (text === "orion-test wait-truncated") await waitTruncated(d);
    },
  });
  try {
    await ctl.run(fs.createReadStream(stream));
    await ctl.finish();
  } finally {
    ctl.close();
  }
  return { events, dials };
}

async function waitTruncated(d: Daemon): Promise<void> {
  const c = await OrionClient.connect({ socket: d.socket });
  try {
    const deadline = Date.now() + 60_000;
    for (;;) {
      const list = await c.list(true);
      if (list.some((s) => s.stage === "truncated" && !s.continued_by)) return;
      if (Date.now() > deadline) throw new Error("no session was truncated");
      await new Promise((r) => setTimeout(r, 20));
    }
  } finally {
    c.close();
  }
}

/** canonical is JSON with object keys sorted, as Go marshals maps. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return "[" + v.map(canonical).join(",") + "]";
  if (v !== null && typeof v === "object") {
    const o = v as Record<string, unknown>;
    return "{" + Object.keys(o).sort().filter((k) => o[k] !== undefined).map((k) => JSON.stringify(k) + ":" + canonical(o[k])).join(",") + "}";
  }
  return JSON.stringify(v);
}

const uuidRE = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g;
const markerRE = /__END_WRITE_([0-9a-f]{12})__/g;
const sha256RE = /\b[0-9a-f]{64}\b/g;

/** normalize: the same steps as the Go suite's normalize. */
function normalize(events: Event[], files: Record<string, string>, root: string) {
  const generic = JSON.parse(JSON.stringify(events)) as Record<string, unknown>[];
  for (const e of generic) {
    const msg = e.message as { content?: unknown } | undefined;
    if (msg && typeof msg.content === "string") {
      try {
        const parsed = JSON.parse(msg.content);
        if (parsed !== null && typeof parsed === "object" && !Array.isArray(parsed)) msg.content = parsed;
      } catch {
        // not JSON: compared as text
      }
    }
  }
  const text = canonical(generic);
  const n = new Map<string, number>();
  for (const id of text.match(uuidRE) ?? []) if (!n.has(id)) n.set(id, n.size + 1);
  const replace = (s: string) => {
    s = s.replace(markerRE, (_m, hex: string) => {
      for (const [id, k] of n) if (id.replaceAll("-", "").startsWith(hex)) return `{{marker:${k}}}`;
      return "{{marker:?}}";
    });
    s = s.replace(uuidRE, (id) => `{{session:${n.get(id)}}}`);
    s = s.replace(sha256RE, "{{sha256}}");
    return s.replaceAll(root, "{{root}}");
  };
  const outFiles: Record<string, string> = {};
  for (const [name, content] of Object.entries(files)) outFiles[name] = replace(content);
  return { events: JSON.parse(replace(text)), files: outFiles };
}

function filesUnder(root: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (dir: string) => {
    for (const de of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, de.name);
      if (de.isDirectory()) walk(p);
      else out[path.relative(root, p).split(path.sep).join("/")] = fs.readFileSync(p, "utf8");
    }
  };
  walk(root);
  return out;
}

/** checkSums: each file's last finalize summary describes the file on disk (an earlier one, the file before a later edit). */
function checkSums(events: Event[]): void {
  const last = new Map<string, Event>();
  for (const e of events) {
    if (e.type === "finalized" && e.result) last.set(e.result.target_file, e);
  }
  for (const e of last.values()) {
    if (!e.result) continue;
    const b = fs.readFileSync(e.result.target_file);
    const sum = createHash("sha256").update(b).digest("hex");
    assert.equal(sum, e.result.file_sha256, `${e.result.target_file}: sha256 of the file`);
    assert.equal(b.length, e.result.file_bytes, `${e.result.target_file}: size of the file`);
  }
}

const fixtures = fs
  .readdirSync(streamsDir)
  .filter((f) => f.endsWith(".sse"))
  .sort();

test("there are shared fixtures", () => {
  assert.ok(fixtures.length >= 6, `fixtures in ${streamsDir}: ${fixtures}`);
});

for (const f of fixtures) {
  const name = f.replace(/\.sse$/, "");
  test(`fixture ${name}`, async () => {
    const d = await startDaemon();
    try {
      const run = await runFixture(d, path.join(streamsDir, f));
      checkSums(run.events);
      const got = normalize(run.events, filesUnder(d.root), d.root);
      const want = JSON.parse(fs.readFileSync(path.join(streamsDir, name + ".want.json"), "utf8"));
      want.files ??= {};
      assert.deepEqual(got, want);
      if (name === "dropped_connection") assert.ok(run.dials >= 3, `${run.dials} dials: the connection was not dropped twice`);
      if (name === "daemon_restart") assert.ok(run.dials >= 2, `${run.dials} dials: no reconnect after the restart`);
    } finally {
      await d.stop();
    }
  });
}
