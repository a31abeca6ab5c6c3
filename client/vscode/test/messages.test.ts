// Each notification says what happened to which file, and offers what the
// person can do about it.
import * as assert from "node:assert/strict";
import { test } from "node:test";

import type { SessionInfo } from "@orion-agent/oriond-client";

import { clip, conflictNotice, correctionsNotice, dirtyNotice, refusalConcerns, refusalNotice, truncatedNotice } from "../src/messages";

const ws = ["/home/ann/proj"];
const base = {
  session_id: "5b2c9e4e-1111",
  operation: "overwrite",
  end_marker: "__END__",
  last_seq: 3,
  end_marker_seen: false,
  created_at: "2026-11-25T11:00:00Z",
  updated_at: "2026-11-25T11:00:09Z",
} as const;

test("conflict: says the file changed under the agent and offers Finalize Anyway and Abort", () => {
  const n = conflictNotice({ session_id: "s1", target_file: "/home/ann/proj/src/app.ts" }, "write", ws);
  assert.equal(n.level, "warning");
  assert.equal(
    n.text,
    "Orion: src/app.ts was changed on disk while an agent was writing it. Its write will be refused so your change is not lost; finalize it anyway to overwrite, or abort it.",
  );
  assert.deepEqual(n.actions.map((a) => [a.title, a.kind, a.sessionId]), [
    ["Finalize Anyway", "finalizeAnyway", "s1"],
    ["Abort", "abort", "s1"],
    ["Show Trace", "showTrace", "s1"],
  ]);
  assert.match(conflictNotice({ session_id: "s1", target_file: "/home/ann/proj/a" }, "remove", ws).text, /^Orion: a was deleted on disk/);
});

test("truncated: how far it got, that the file is untouched, where the part went", () => {
  const s = { ...base, target_file: "/home/ann/proj/big.go", stage: "truncated", bytes: 5000, lines: 120 } as SessionInfo;
  assert.equal(
    truncatedNotice(s, ws).text,
    "Orion: the agent's write of big.go stopped after 120 lines (5 KiB) without its end marker, so big.go was not replaced. Ask the agent to continue the file, or abort the session.",
  );
  s.truncation = { session_id: s.session_id, target_file: s.target_file, lines: 120, bytes: 5000, tail: "", continue_prompt: "", incomplete_file: "/home/ann/proj/big.go.incomplete" };
  const n = truncatedNotice(s, ws);
  assert.match(n.text, /What arrived is in big\.go\.incomplete\./);
  assert.deepEqual(n.actions.map((a) => a.title), ["Open Incomplete File", "Abort", "Show Trace"]);
  assert.equal(n.actions[0].value, "/home/ann/proj/big.go.incomplete");
});

test("needs corrections: the first finding, how many more, and that the file is unchanged", () => {
  const s = {
    ...base,
    target_file: "/home/ann/proj/conf.json",
    stage: "needs_corrections",
    bytes: 7,
    lines: 1,
    validation: {
      file_type: "json",
      syntax_ok: false,
      truncated: true,
      blocked: true,
      findings: [
        { code: "truncated", category: "truncation", severity: "error", line: 2, message: "the JSON ends before it is complete" },
        { code: "syntax_error", category: "data_syntax", severity: "error", message: "unexpected end" },
      ],
    },
  } as SessionInfo;
  const n = correctionsNotice(s, ws);
  assert.equal(
    n.text,
    "Orion: conf.json was not written: the agent's content failed its checks (line 2: the JSON ends before it is complete) and 1 more. The agent is told to send corrected content; your file is unchanged.",
  );
  assert.deepEqual(n.actions.map((a) => a.kind), ["showProblems", "showTrace"]);
});

test("protected_path: the daemon's reason, nothing written, and the flag only the person can give", () => {
  const message =
    "/home/ann/proj/.git/config is protected (rule git-name, at /home/ann/proj/.git): git runs hooks and config from a repository's .git at the next git command. The model must write somewhere else; only the person can allow it, with --allow-protected /home/ann/proj/.git/config (allow-protected in oriond.toml)";
  const n = refusalNotice({ reason: "protected_path", message, method: "session.begin" }, ws);
  assert.ok(n);
  assert.ok(n.text.startsWith("Orion refused an agent's write to a protected path: /home/ann/proj/.git/config is protected (rule git-name"), n.text);
  assert.ok(n.text.endsWith("at the next git command. Nothing was written. Only you can lift this, by restarting oriond with --allow-protected."), n.text);
  assert.deepEqual(n.actions, [{ title: "Copy --allow-protected Flag", kind: "copy", value: "--allow-protected /home/ann/proj/.git/config" }]);
});

test("outside the roots: names the flag that allows this workspace; outside the workspace: the agent's to fix", () => {
  const out = refusalNotice(
    { reason: "outside_allowed_roots", method: "session.begin", message: 'target "/etc/passwd" resolves to /etc/passwd, outside the allowed roots (/srv); give a path inside one of them' },
    ws,
  );
  assert.ok(out);
  assert.equal(
    out.text,
    'Orion refused an agent\'s write outside the folders oriond may write: target "/etc/passwd" resolves to /etc/passwd, outside the allowed roots (/srv); give a path inside one of them Nothing was written. To let agents write in this workspace, restart oriond with --allow-root /home/ann/proj.',
  );
  assert.deepEqual(out.actions.map((a) => a.value), ["--allow-root /home/ann/proj"]);
  const ow = refusalNotice({ reason: "outside_workspace", method: "session.begin", message: "target ../x is outside the workspace /home/ann/proj", session_id: "s9" }, ws);
  assert.match(ow!.text, /outside its workspace: .* Nothing was written; the agent was told to write inside the workspace\.$/);
  assert.equal(refusalNotice({ reason: "seq_gap", method: "session.append", message: "x" }, ws), undefined, "not the person's to act on");
});

test("which refusals concern this window", () => {
  const r = { reason: "protected_path", method: "session.begin", message: "/home/ann/proj/.git/config is protected" };
  assert.equal(refusalConcerns(r, ws, "workspace"), true);
  assert.equal(refusalConcerns(r, ["/home/bob"], "workspace"), false);
  assert.equal(refusalConcerns(r, ["/home/bob"], "all"), true);
  assert.equal(refusalConcerns(r, [], "workspace"), true, "no folder open: all");
  assert.equal(refusalConcerns(r, ws, "off"), false);
});

test("a write under unsaved changes offers Compare and Undo the agent's write", () => {
  const n = dirtyNotice("s3", "/home/ann/proj/notes.md", ws, true);
  assert.equal(n.text, "Orion: an agent wrote notes.md while you have unsaved changes in it. Saving now would overwrite the agent's version.");
  assert.deepEqual(n.actions.map((a) => a.title), ["Compare", "Undo the agent's write"]);
  assert.deepEqual(dirtyNotice("s3", "/home/ann/proj/notes.md", ws, false).actions.map((a) => a.title), ["Compare"]);
});

test("clip keeps long daemon messages to one readable line", () => {
  assert.equal(clip("a\n  b\tc"), "a b c");
  const long = clip("x".repeat(500), 100);
  assert.equal(long.length, 100);
  assert.ok(long.endsWith("…"));
});
