// The sessions view and the status bar as a person reads them.
import * as assert from "node:assert/strict";
import { test } from "node:test";

import type { SessionInfo } from "@orion-agent/oriond-client";

import { ladder } from "../src/ladder";
import { age, displayPath, inWorkspace, lastUndoable, sessionNode, size, statusBar, tree } from "../src/model";

const now = new Date("2026-11-25T12:00:00Z");
let n = 0;
function session(p: Partial<SessionInfo> & { target_file: string }): SessionInfo {
  n++;
  return {
    session_id: `s${n}-0000-0000`,
    operation: "overwrite",
    stage: "completed",
    end_marker: "__END__",
    last_seq: 1,
    bytes: 100,
    lines: 4,
    end_marker_seen: true,
    created_at: `2026-11-25T11:${String(10 + n).padStart(2, "0")}:00Z`,
    updated_at: `2026-11-25T11:${String(10 + n).padStart(2, "0")}:30Z`,
    ...p,
  } as SessionInfo;
}
function written(p: Partial<SessionInfo> & { target_file: string }): SessionInfo {
  const s = session(p);
  s.result = { session_id: s.session_id, stage: "completed", target_file: s.target_file, operation: s.operation, bytes: s.bytes, lines: s.lines, sha256: "x", file_bytes: s.bytes, file_sha256: "x", end_marker_seen: true, mode: "0644", backup_id: "b" };
  return s;
}

test("the tree groups the workspace's sessions by stage, writing first, newest first in each group", () => {
  const old = written({ target_file: "/w/old.txt" });
  const streamingOld = session({ target_file: "/w/src/a.ts", stage: "streaming", bytes: 2048, lines: 80, updated_at: "2026-11-25T11:11:00Z" });
  const newer = written({ target_file: "/w/new.txt" });
  const streamingNew = session({ target_file: "/w/src/b.ts", stage: "streaming" });
  const elsewhere = session({ target_file: "/other/x.txt", stage: "streaming" });
  const refused = session({ target_file: "/w/data.json", stage: "needs_corrections" });
  const groups = tree([old, streamingOld, newer, streamingNew, elsewhere, refused], ["/w"], now);
  assert.deepEqual(
    groups.map((g) => [g.label, g.description]),
    [
      ["Writing", "2"],
      ["Needs corrections", "1"],
      ["Written", "2"],
    ],
  );
  assert.deepEqual(
    groups[0].children.map((c) => c.label),
    ["src/b.ts", "src/a.ts"],
    "newest first; the other folder's session is not listed",
  );
  assert.deepEqual(groups[2].children.map((c) => c.label), ["new.txt", "old.txt"]);
  const a = groups[0].children[1];
  assert.equal(a.kind === "session" && a.description, "80 lines · 2 KiB · 49m ago");
  assert.equal(a.kind === "session" && a.contextValue, "session open");
  const w = groups[2].children[0];
  assert.equal(w.kind === "session" && w.contextValue, "session written undoable");
});

test("a transaction's files sit together under it, and a conflict offers Finalize Anyway", () => {
  const t1 = session({ target_file: "/w/a.go", stage: "streaming", tx_id: "tx-12345678-aaaa" });
  const t2 = session({ target_file: "/w/b.go", stage: "streaming", tx_id: "tx-12345678-aaaa" });
  const c = session({ target_file: "/w/c.go", stage: "streaming", conflict: "write" });
  const [g] = tree([t1, t2, c], ["/w"], now);
  assert.equal(g.children.length, 2);
  const tx = g.children.find((x) => x.kind === "tx");
  assert.ok(tx && tx.kind === "tx");
  assert.equal(tx.label, "Transaction tx-12345");
  assert.equal(tx.description, "2 files");
  assert.deepEqual(tx.children.map((x) => x.label), ["b.go", "a.go"]);
  const cn = sessionNode(c, ["/w"], now);
  assert.match(cn.contextValue, /\bconflict\b/);
  assert.match(cn.description, /^changed on disk \(write\)/);
});

test("an undone or dry-run write is not undoable; the last undoable is the newest", () => {
  const a = written({ target_file: "/w/a.txt" });
  const b = written({ target_file: "/w/b.txt", undone: true });
  const c = written({ target_file: "/w/c.txt" });
  c.result!.dry_run = true;
  const outside = written({ target_file: "/x/d.txt" });
  assert.equal(lastUndoable([a, b, c, outside], ["/w"])?.target_file, "/w/a.txt");
  assert.equal(sessionNode(b, ["/w"], now).contextValue, "session written");
  assert.equal(lastUndoable([b, c], ["/w"]), undefined);
});

test("the status bar: not running, how many write, the open file's progress, what needs a look", () => {
  const down = statusBar(false, [], ["/w"]);
  assert.equal(down.text, "$(circle-slash) Orion: not running");
  assert.equal(down.command, "orion.startDaemon");
  const s1 = session({ target_file: "/w/a.ts", stage: "streaming", bytes: 4100, lines: 120 });
  const s2 = session({ target_file: "/w/b.ts", stage: "awaiting_content", bytes: 0, lines: 0 });
  assert.equal(statusBar(true, [s1, s2], ["/w"]).text, "$(sync~spin) Orion: 2 writing");
  assert.equal(statusBar(true, [s1, s2], ["/w"], ["/w/a.ts"]).text, "$(sync~spin) Orion: 2 writing · a.ts 120 lines, 4 KiB");
  assert.equal(statusBar(true, [s1, s2], ["/elsewhere"]).text, "$(check) Orion", "sessions of other folders do not count");
  const t = session({ target_file: "/w/c.ts", stage: "truncated" });
  assert.equal(statusBar(true, [t, written({ target_file: "/w/d" })], ["/w"]).text, "$(warning) Orion: 1 to look at");
  assert.equal(statusBar(true, [written({ target_file: "/w/d" }), written({ target_file: "/w/e" })], ["/w"]).text, "$(check) Orion: 2 written");
  assert.equal(statusBar(true, [], ["/w"]).command, "orion.showSessions");
  assert.match(statusBar(false, [], ["/w"], [], false).tooltip, /oriond run.*Restricted Mode/, "in Restricted Mode a click starts nothing: the tooltip says what to run");
});

test("the status bar and the view count the same written files; undone writes and dry runs have groups of their own", () => {
  const ws = ["/w"];
  const w1 = written({ target_file: "/w/a" });
  const w2 = written({ target_file: "/w/b" });
  const undone = written({ target_file: "/w/c", undone: true });
  const dry = session({ target_file: "/w/d", stage: "aborted", dry_run: true });
  const aborted = session({ target_file: "/w/e", stage: "aborted" });
  const all = [w1, w2, undone, dry, aborted];
  const groups = tree(all, ws, now);
  assert.deepEqual(
    groups.map((g) => [g.label, g.description]),
    [
      ["Written", "2"],
      ["Undone", "1"],
      ["Dry run", "1"],
      ["Aborted", "1"],
    ],
  );
  assert.equal(statusBar(true, all, ws).text, "$(check) Orion: 2 written");
  assert.match(sessionNode(dry, ws, now).tooltip, /^Dry run · session/m);
});

test("paths, sizes and ages read as a person expects", () => {
  assert.equal(displayPath("/w/src/a.ts", ["/w"]), "src/a.ts");
  assert.equal(displayPath("/w2/a.ts", ["/w", "/w2"]), "w2/a.ts", "with several folders, the folder's name leads");
  assert.equal(displayPath("/wx/a.ts", ["/w"]), "/wx/a.ts", "a sibling with the same prefix is not inside");
  assert.deepEqual(inWorkspace([session({ target_file: "/wx/a" }), session({ target_file: "/w/a" })], ["/w"]).map((s) => s.target_file), ["/w/a"]);
  assert.equal(inWorkspace([session({ target_file: "/x/a" })], []).length, 1, "no folder open: every session");
  // As internal/textfmt.Size writes them, for orionctl and the page.
  assert.deepEqual(
    [1, 812, 1023, 1024, 1535, 1536, 4463, 1023 << 10, 1 << 20, 3670016].map(size),
    ["1 byte", "812 bytes", "1,023 bytes", "1 KiB", "1 KiB", "2 KiB", "4 KiB", "1,023 KiB", "1.0 MiB", "3.5 MiB"],
  );
  assert.deepEqual(
    ["2026-11-25T12:00:00Z", "2026-11-25T11:59:48Z", "2026-11-25T11:55:00Z", "2026-11-25T09:00:00Z", "2026-11-23T12:00:00Z", "garbage"].map((t) => age(t, now)),
    ["now", "12s ago", "5m ago", "3h ago", "2d ago", "now"],
  );
});

test("without orionctl, a trace reads one event a line", () => {
  const s = written({ target_file: "/w/a.txt", intent: "say hi" });
  const text = ladder(s, s.session_id, [
    { id: "1", time: "2026-11-25T11:00:00.000Z", type: "request", method: "session.begin", fields: { duration_ms: 1.5 } },
    { id: "2", time: "2026-11-25T11:00:00.004Z", type: "request", method: "session.append", session_id: s.session_id, fields: { appends: 2, seq: 2, bytes: 10, end_marker_seen: true } },
    { id: "3", time: "2026-11-25T11:00:00.006Z", type: "session.write", session_id: s.session_id, fields: { target: "/w/a.txt", bytes: 10, lines: 2, sha256: "725b7eda45341e8f" } },
    { id: "4", time: "2026-11-25T11:00:00.007Z", type: "request", method: "session.undo", fields: { error_code: -32002, reason: "nothing_to_undo", error: "no completed write" } },
  ]);
  assert.equal(
    text,
    [
      `Write session ${s.session_id}`,
      "Target: /w/a.txt (overwrite)",
      "Intent: say hi",
      "Stage:  completed, 100 bytes, 4 lines",
      "",
      "[1] +0ms  session.begin ok 1.5 ms",
      "[2] +4ms  session.append ×2: up to seq 2, 10 bytes received, end marker seen",
      "[3] +6ms  wrote /w/a.txt: 10 bytes, 2 lines, sha256 725b7eda4534",
      "[4] +7ms  session.undo refused (nothing_to_undo): no completed write",
      "",
    ].join("\n"),
  );
  assert.match(ladder(undefined, "gone", []), /No trace events are kept/);
});
