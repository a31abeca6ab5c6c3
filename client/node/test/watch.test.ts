// The SessionWatcher against the real oriond: it learns of sessions other
// clients drive (from the trace), of refusals, and survives a restart.
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { after, before, test } from "node:test";

import { OrionClient, SessionEvent, SessionWatcher, TraceEvent, sessionEvent } from "../src";
import { Daemon, startDaemon } from "./daemon";

let d: Daemon;
before(async () => {
  d = await startDaemon();
});
after(async () => {
  await d.stop();
});

// until resolves with the first event of the watcher that pred accepts.
function until<T>(w: SessionWatcher, name: "event" | "sessions" | "connected" | "disconnected", pred: (v: any) => T | undefined, ms = 10_000): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      w.off(name, on);
      reject(new Error(`no matching ${name} within ${ms} ms`));
    }, ms);
    const on = (v: unknown) => {
      const r = pred(v);
      if (r === undefined) return;
      clearTimeout(timer);
      w.off(name, on);
      resolve(r);
    };
    w.on(name, on);
  });
}

test("sessionEvent reads the trace events a watcher needs and skips the rest", () => {
  const ev = (type: string, fields: object, extra: Partial<TraceEvent> = {}): TraceEvent =>
    ({ id: "1", time: "2026-01-01T00:00:00Z", type, fields, ...extra }) as TraceEvent;
  assert.deepEqual(sessionEvent(ev("session.stage", { stage: "awaiting_content", target: "/w/a.txt", bytes: 0, lines: 0 }, { session_id: "s" })), {
    kind: "stage", session_id: "s", stage: "awaiting_content", target: "/w/a.txt", bytes: 0, lines: 0, time: "2026-01-01T00:00:00Z",
  });
  assert.equal(sessionEvent(ev("session.write", { target: "/w/a.txt", bytes: 10, lines: 2, sha256: "ab" }, { session_id: "s" }))?.kind, "written");
  assert.deepEqual(sessionEvent(ev("session.conflict", { target: "/w/a.txt", event: "write" }, { session_id: "s" })), {
    kind: "conflict", session_id: "s", target: "/w/a.txt", event: "write", time: "2026-01-01T00:00:00Z",
  });
  const refused = sessionEvent(ev("request", { error_code: -32006, reason: "protected_path", error: "/w/.git/config is protected" }, { method: "session.begin" }));
  assert.deepEqual(refused, { kind: "refused", method: "session.begin", code: -32006, reason: "protected_path", message: "/w/.git/config is protected", time: "2026-01-01T00:00:00Z" });
  const progress = sessionEvent(ev("request", { bytes: 4096, seq: 7, end_marker_seen: false }, { method: "session.append", session_id: "s" }));
  assert.equal(progress?.kind === "progress" && progress.bytes, 4096);
  // A failed read is nobody's write; successful reads, validation details
  // and types from a newer daemon are not session events.
  assert.equal(sessionEvent(ev("request", { error_code: -32001, reason: "session_not_found" }, { method: "session.get" })), undefined);
  assert.equal(sessionEvent(ev("request", { duration_ms: 1 }, { method: "session.list" })), undefined);
  assert.equal(sessionEvent(ev("validation", { ok: true }, { session_id: "s" })), undefined);
  assert.equal(sessionEvent(ev("from.the.future", {}, { session_id: "s" })), undefined);
  assert.equal(sessionEvent(ev("session.stage", "not an object" as unknown as object, { session_id: "s" })), undefined);
});

test("a watcher sees another client's session stream, land and get refused, and reconnects after a restart", async () => {
  const w = new SessionWatcher({ socket: d.socket, retryMs: 50, maxRetryMs: 200, refreshMs: 50 });
  const connected = until(w, "connected", (st) => st);
  w.start();
  const c = await OrionClient.connect({ socket: d.socket });
  try {
    assert.equal((await connected).socket, d.socket);
    const target = path.join(d.root, "watched.txt");
    fs.writeFileSync(target, "old\n");

    const b = await c.begin({ intent: "watch me", target_file: "watched.txt", operation: "overwrite", workspace_root: d.root });
    const streaming = until(w, "sessions", (l: any[]) => l.find((s) => s.session_id === b.session_id && s.stage === "streaming"));
    await c.append({ session_id: b.session_id, seq: 1, chunk: "new\n" });
    assert.equal((await streaming).target_file, target);

    const written = until(w, "event", (e: SessionEvent) => (e.kind === "written" && e.session_id === b.session_id ? e : undefined));
    const completed = until(w, "sessions", (l: any[]) => l.find((s) => s.session_id === b.session_id && s.stage === "completed"));
    await c.append({ session_id: b.session_id, seq: 2, chunk: `${b.end_marker}\n` });
    await c.finalize({ session_id: b.session_id });
    const wr = await written;
    assert.equal(wr.kind === "written" && wr.target, target);
    assert.equal((await completed).result?.lines, 1);
    assert.equal(w.sessions[0].session_id, b.session_id, "newest first");

    // The person's backup of what the write replaced, where the daemon
    // serves it.
    const st = await c.status();
    const backup = await c.backup(b.session_id);
    if (st.methods.includes("session.content")) {
      assert.equal(backup?.available, true);
      assert.equal(backup?.content, "old\n");
    } else {
      assert.equal(backup, undefined, "a daemon without session.content: backup says so with undefined");
    }

    const refused = until(w, "event", (e: SessionEvent) => (e.kind === "refused" ? e : undefined));
    await assert.rejects(c.begin({ target_file: ".git/config", operation: "overwrite", workspace_root: d.root }));
    const r = await refused;
    assert.equal(r.kind === "refused" && r.reason, "protected_path");
    assert.ok(r.kind === "refused" && r.message.includes(path.join(d.root, ".git")), JSON.stringify(r));

    const down = until(w, "disconnected", (e) => e);
    const up = until(w, "connected", (st) => st, 20_000);
    await d.restart();
    await down;
    await up;
    assert.ok(w.client, "connected again");
    assert.ok((await w.refresh()).some((s) => s.session_id === b.session_id), "the session survived the restart");
  } finally {
    w.stop();
    c.close();
  }
});

test("a watcher with no daemon keeps trying, with backoff", async () => {
  const w = new SessionWatcher({ socket: path.join(d.stateDir, "nobody.sock"), retryMs: 20, maxRetryMs: 40 });
  let failures = 0;
  w.on("disconnected", () => failures++);
  w.start();
  await new Promise((r) => setTimeout(r, 200));
  w.stop();
  assert.ok(failures >= 2, `tried ${failures} times`);
  assert.equal(w.client, undefined);
});

test("list follows session.list's pages, and stops at max", async () => {
  const c = await OrionClient.connect({ socket: d.socket });
  try {
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const b = await c.begin({ target_file: `paged-${i}.txt`, operation: "create", workspace_root: d.root });
      ids.push(b.session_id);
    }
    const page = await c.listPage({ all: true, limit: 1 });
    assert.equal(page.sessions.length, 1);
    assert.ok(page.next_cursor, "a cursor for the next page");
    const all = await c.list(true);
    for (const id of ids) assert.ok(all.some((s) => s.session_id === id), id);
    assert.equal(new Set(all.map((s) => s.session_id)).size, all.length, "no session twice");
    for (const id of ids) await c.abort(id);
  } finally {
    c.close();
  }
});
