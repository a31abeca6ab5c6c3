// The typed client against the real oriond: every method, refusals as
// OrionError, notifications as events, reconnect with resume.
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { after, before, test } from "node:test";

import {
  ConnectionLostError,
  DaemonUnreachableError,
  ErrorCodes,
  ErrorReasons,
  IdleNotification,
  Methods,
  OrionClient,
  OrionError,
  Reasons,
  RefusalAdvice,
  TruncationContext,
} from "../src";
import { Daemon, startDaemon } from "./daemon";

let d: Daemon;
before(async () => {
  d = await startDaemon();
});
after(async () => {
  await d.stop();
});

test("status, tools and the whole write lifecycle", async () => {
  const c = await OrionClient.connect({ socket: d.socket });
  try {
    const st = await c.status();
    assert.equal(st.socket, d.socket);
    assert.deepEqual(st.allowed_roots, [d.root]);
    for (const m of ["session.begin", "session.resume", "session.continue", "tools.definitions"]) assert.ok(st.methods.includes(m), m);

    const tools = await c.toolDefinitions();
    assert.equal(tools[0].function.name, "WritePlanTool_begin");

    const b = await c.begin({ intent: "test", target_file: "life.txt", operation: "create", workspace_root: d.root });
    assert.equal(b.stage, "awaiting_content");
    assert.equal((await c.append({ session_id: b.session_id, seq: 1, chunk: "one\n" })).lines, 1);
    const dup = await c.append({ session_id: b.session_id, seq: 1, chunk: "one\n" });
    assert.equal(dup.duplicate, true);
    const ack = await c.append({ session_id: b.session_id, seq: 2, chunk: `two ü\n${b.end_marker}\n` });
    assert.equal(ack.end_marker_seen, true);
    const r = await c.resume(b.session_id);
    assert.equal(r.next_seq, 3);
    assert.equal(r.end_marker, b.end_marker);
    const info = await c.get(b.session_id);
    assert.equal(info.last_seq, 2);
    assert.ok((await c.list()).some((s) => s.session_id === b.session_id));
    const fin = await c.finalize({ session_id: b.session_id });
    assert.equal(fin.lines, 2);
    assert.equal(fs.readFileSync(path.join(d.root, "life.txt"), "utf8"), "one\ntwo ü\n");

    const gone = await c.begin({ intent: "test", target_file: "gone.txt", operation: "create", workspace_root: d.root });
    assert.equal((await c.abort(gone.session_id)).stage, "aborted");
    const cleaned = await c.clean({});
    assert.ok(Array.isArray(cleaned.expired));
  } finally {
    c.close();
  }
});

test("refusals are OrionError with code and reason", async () => {
  const c = await OrionClient.connect({ socket: d.socket });
  try {
    fs.writeFileSync(path.join(d.root, "exists.txt"), "x");
    await assert.rejects(c.begin({ target_file: "exists.txt", operation: "create", workspace_root: d.root }), (err: unknown) => {
      assert.ok(err instanceof OrionError);
      assert.equal(err.code, ErrorCodes.targetExists);
      assert.equal(err.reason, "target_exists");
      return true;
    });
    const b = await c.begin({ target_file: "gap.txt", operation: "create", workspace_root: d.root });
    await assert.rejects(c.append({ session_id: b.session_id, seq: 3, chunk: "x" }), (err: unknown) => {
      assert.ok(err instanceof OrionError);
      assert.equal(err.reason, "seq_gap");
      assert.equal(err.data.expected_seq, 1);
      return true;
    });
    await assert.rejects(c.call("no.such.method"), (err: unknown) => err instanceof OrionError && err.reason === "unknown_method");
  } finally {
    c.close();
  }
});

test("an unreachable daemon and a closed connection are told apart from refusals", async () => {
  await assert.rejects(OrionClient.connect({ socket: path.join(d.stateDir, "none.sock") }), DaemonUnreachableError);
  const c = await OrionClient.connect({ socket: d.socket });
  c.close();
  await assert.rejects(c.status(), ConnectionLostError);
});

test("notifications arrive as events: idle, then truncated", async () => {
  const c = await OrionClient.connect({ socket: d.socket });
  try {
    const idle = new Promise<IdleNotification>((resolve) => c.once("idle", resolve));
    const truncated = new Promise<TruncationContext>((resolve) => c.once("truncated", resolve));
    const b = await c.begin({ target_file: "idle.txt", operation: "create", workspace_root: d.root, idle_ms: 100, auto_finalize_ms: 400 });
    await c.append({ session_id: b.session_id, seq: 1, chunk: "partial\n" });
    const n = await idle;
    assert.equal(n.session_id, b.session_id);
    assert.ok(n.prompt.includes(b.end_marker), n.prompt);
    const t = await truncated;
    assert.equal(t.lines, 1);
    assert.ok(t.continue_prompt.includes("line 2"), t.continue_prompt);
    const cont = await c.continueSession(b.session_id);
    await c.append({ session_id: cont.session_id, seq: 1, chunk: "rest\n" });
    await c.finalize({ session_id: cont.session_id, end_of_input: true });
    assert.equal(fs.readFileSync(path.join(d.root, "idle.txt"), "utf8"), "partial\nrest\n");
  } finally {
    c.close();
  }
});

test("appendReliably reconnects, resumes and does not store a chunk twice", async () => {
  const c = await OrionClient.connect({ socket: d.socket });
  try {
    const b = await c.begin({ target_file: "reliable.txt", operation: "create", workspace_root: d.root });
    await c.appendReliably({ session_id: b.session_id, seq: 1, chunk: "a\n" });
    let reconnects = 0;
    c.on("reconnect", () => reconnects++);
    c.close(); // the connection drops between two chunks
    await c.appendReliably({ session_id: b.session_id, seq: 2, chunk: "b\n" });
    // Sent again (as after a lost ack), it is acknowledged as a duplicate.
    await c.appendReliably({ session_id: b.session_id, seq: 2, chunk: "b\n" });
    assert.equal(reconnects, 1);
    assert.equal((await c.resume(b.session_id)).next_seq, 3);
    await c.append({ session_id: b.session_id, seq: 3, chunk: b.end_marker + "\n" });
    await c.finalize({ session_id: b.session_id });
    assert.equal(fs.readFileSync(path.join(d.root, "reliable.txt"), "utf8"), "a\nb\n");
  } finally {
    c.close();
  }
});

// The generated protocol: every method the daemon serves is typed, undo and
// the trace methods included, and every reason comes with its doc.
test("the generated protocol matches the daemon, undo and trace included", async () => {
  const c = await OrionClient.connect({ socket: d.socket });
  try {
    const st = await c.status();
    assert.deepEqual([...st.methods].sort(), Object.values(Methods).sort());
    const b = await c.begin({ intent: "undo", target_file: "undo.txt", operation: "create", workspace_root: d.root });
    await c.append({ session_id: b.session_id, seq: 1, chunk: `x\n${b.end_marker}\n` });
    await c.finalize({ session_id: b.session_id });
    await c.undo(b.session_id);
    assert.equal(fs.existsSync(path.join(d.root, "undo.txt")), false);
    await assert.rejects(c.undo(b.session_id), (err: unknown) => err instanceof OrionError && err.reason === Reasons.nothingToUndo);
    const events = await c.traceList({ session_id: b.session_id });
    assert.ok(events.events.some((e) => e.type === "session.write"));
    assert.equal((await c.traceFollow({ session_id: "none" })).following, true);
    for (const r of Object.values(Reasons)) assert.ok(ErrorReasons.some((d) => d.reason === r), r);
    assert.match(RefusalAdvice[Reasons.protected], /protected/);
  } finally {
    c.close();
  }
});
