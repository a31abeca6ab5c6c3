// The client refuses a socket that is not the user's before it sends
// anything: another user's socket or directory, or a directory others may
// write.
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as net from "node:net";
import * as path from "node:path";
import { test } from "node:test";

import { OrionClient, UntrustedSocketError } from "../src";
import { socketTempDir } from "./daemon";

async function fakeDaemon(): Promise<{ dir: string; socket: string; received: () => number; accepted: () => number; close: () => void }> {
  const dir = socketTempDir("orion-trust-", "oriond.sock");
  const socket = path.join(dir, "oriond.sock");
  let received = 0;
  let accepted = 0;
  const server = net.createServer((c) => {
    accepted++;
    c.on("data", (b) => (received += b.length));
  });
  await new Promise<void>((resolve) => server.listen(socket, resolve));
  return {
    dir,
    socket,
    received: () => received,
    accepted: () => accepted,
    close: () => {
      server.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

test("a directory others may write is refused and nothing is sent", async () => {
  const f = await fakeDaemon();
  try {
    fs.chmodSync(f.dir, 0o777);
    await assert.rejects(OrionClient.connect({ socket: f.socket, reconnectAttempts: 1 }), (err: Error) => {
      assert.ok(err instanceof UntrustedSocketError, String(err));
      assert.match(err.message, /writable by others/);
      assert.match(err.message, /XDG_RUNTIME_DIR/);
      return true;
    });
    assert.equal(f.accepted(), 0);
  } finally {
    f.close();
  }
});

test("another user's socket is refused, naming its owner", { skip: process.getuid?.() !== 0 && "chown needs root" }, async () => {
  const f = await fakeDaemon();
  try {
    fs.lchownSync(f.socket, 65534, 65534);
    await assert.rejects(OrionClient.connect({ socket: f.socket, reconnectAttempts: 1 }), (err: Error) => {
      assert.ok(err instanceof UntrustedSocketError, String(err));
      assert.match(err.message, /uid 65534/);
      return true;
    });
    assert.equal(f.accepted(), 0);
    assert.equal(f.received(), 0);
  } finally {
    f.close();
  }
});
