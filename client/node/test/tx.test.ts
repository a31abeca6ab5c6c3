// Transactions against the real oriond: several files written all or
// none (tx.begin, tx.commit, tx.abort, tx.get).
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { after, before, test } from "node:test";

import { ErrorCodes, OrionClient, OrionError } from "../src";
import { Daemon, startDaemon } from "./daemon";

let d: Daemon;
before(async () => {
  d = await startDaemon();
});
after(async () => {
  await d.stop();
});

test("a two-file transaction: streamed, nothing written before the commit, then both", async () => {
  const c = await OrionClient.connect({ socket: d.socket });
  try {
    fs.writeFileSync(path.join(d.root, "tx-a.txt"), "old a\n");
    const tx = await c.txBegin({
      intent: "two files at once",
      workspace_root: d.root,
      files: [
        { target_file: "tx-a.txt", operation: "overwrite" },
        { target_file: "tx-b.md", operation: "create" },
      ],
    });
    assert.equal(tx.stage, "open");
    assert.deepEqual(
      tx.sessions.map((s) => path.basename(s.target_file)),
      ["tx-a.txt", "tx-b.md"],
    );
    const contents = ["new a\n", "# b\n\nü\n"];
    for (const [i, s] of tx.sessions.entries()) {
      await c.append({ session_id: s.session_id, seq: 1, chunk: contents[i] });
      const ack = await c.append({ session_id: s.session_id, seq: 2, chunk: s.end_marker + "\n" });
      assert.equal(ack.end_marker_seen, true);
    }
    // Every file is streamed and none is written until the commit.
    assert.equal(fs.readFileSync(path.join(d.root, "tx-a.txt"), "utf8"), "old a\n");
    assert.equal(fs.existsSync(path.join(d.root, "tx-b.md")), false);
    const open = await c.txGet(tx.tx_id);
    assert.equal(open.stage, "open");
    assert.deepEqual(open.sessions, tx.sessions.map((s) => s.session_id));

    const r = await c.txCommit({ tx_id: tx.tx_id });
    assert.equal(r.stage, "committed");
    assert.deepEqual(
      r.files.map((f) => [path.basename(f.target_file), f.tx_id]),
      [
        ["tx-a.txt", tx.tx_id],
        ["tx-b.md", tx.tx_id],
      ],
    );
    assert.equal(fs.readFileSync(path.join(d.root, "tx-a.txt"), "utf8"), contents[0]);
    assert.equal(fs.readFileSync(path.join(d.root, "tx-b.md"), "utf8"), contents[1]);
    const done = await c.txGet(tx.tx_id);
    assert.equal(done.stage, "committed");
    assert.equal(done.files?.length, 2);
  } finally {
    c.close();
  }
});

test("an aborted transaction writes nothing; an unknown one is tx_not_found", async () => {
  const c = await OrionClient.connect({ socket: d.socket });
  try {
    const tx = await c.txBegin({
      workspace_root: d.root,
      files: [
        { target_file: "ab-1.txt", operation: "create" },
        { target_file: "ab-2.txt", operation: "create" },
      ],
    });
    await c.append({ session_id: tx.sessions[0].session_id, seq: 1, chunk: "one\n" + tx.sessions[0].end_marker + "\n" });
    assert.equal((await c.txAbort(tx.tx_id)).stage, "aborted");
    assert.equal(fs.existsSync(path.join(d.root, "ab-1.txt")), false);
    await assert.rejects(c.txCommit({ tx_id: tx.tx_id }), OrionError);
    await assert.rejects(c.txGet("no-such-tx"), (err: unknown) => {
      assert.ok(err instanceof OrionError);
      assert.equal(err.code, ErrorCodes.txNotFound);
      assert.equal(err.reason, "tx_not_found");
      return true;
    });
  } finally {
    c.close();
  }
});
