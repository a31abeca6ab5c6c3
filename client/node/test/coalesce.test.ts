// A model streaming a token per delta through the stream controller: the
// same check as the Go suite's TestTokenStreamCoalesces, with the client
// wrapped instead of a proxy in front of the daemon.
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { after, before, test } from "node:test";

import { OrionClient, StreamController } from "../src";
import { Daemon, startDaemon } from "./daemon";

let d: Daemon;
before(async () => {
  d = await startDaemon();
});
after(async () => {
  await d.stop();
});

interface LoggedAppend {
  sent: number;
  answered: number;
  bytes: number;
}

test("a token-per-delta stream costs at most one append per round trip, and no delta waits past the next reply", async () => {
  // Every append's reply is held this long, as a slower daemon would.
  const delayMs = 2;
  const appends: LoggedAppend[] = [];
  let inflight = 0;
  let maxInflight = 0;
  let sentBytes = 0;
  const ctl = await StreamController.create({
    socket: d.socket,
    workspaceRoot: d.root,
    chunkBytes: 1 << 20, // only the round trip may bound an append here
    connect: async (socket) => {
      const cli = await OrionClient.connect({ socket });
      const append = cli.append.bind(cli);
      cli.append = async (p) => {
        const a: LoggedAppend = { sent: performance.now(), answered: 0, bytes: Buffer.byteLength(p.chunk) };
        appends.push(a);
        sentBytes += a.bytes;
        maxInflight = Math.max(maxInflight, ++inflight);
        try {
          const res = await append(p);
          await new Promise((r) => setTimeout(r, delayMs));
          return res;
        } finally {
          a.answered = performance.now();
          inflight--;
        }
      };
      return cli;
    },
  });
  // One event: its data line and the blank line that ends it, as providers send.
  const send = async (delta: Record<string, unknown>) => {
    await ctl.line("data: " + JSON.stringify({ choices: [{ index: 0, delta }] }));
    await ctl.line("");
  };
  try {
    await send({ tool_calls: [{ index: 0, id: "call_1", function: { name: "WritePlanTool_begin", arguments: "" } }] });
    await send({ tool_calls: [{ index: 0, function: { arguments: '{"intent":"x","target_file":"tokens.txt","operation":"create"}' } }] });
    await ctl.line("data: [DONE]");

    const deltas: string[] = [];
    for (let i = 0; i < 5000; i++) {
      const n = String(i % 1000).padStart(3, "0");
      deltas.push(i % 16 === 15 || i === 4999 ? n + "\n" : n + " ");
    }
    // fed[k]: when delta k had been taken in, and how many bytes had.
    const fed: { at: number; bytes: number }[] = [];
    let total = 0;
    for (const delta of deltas) {
      await send({ content: delta });
      total += Buffer.byteLength(delta);
      fed.push({ at: performance.now(), bytes: total });
      // Nothing is out and the delta was not sent: it would wait for the
      // next delta or the marker, however long the model takes.
      const deadline = performance.now() + 10_000;
      while (!(inflight > 0 || sentBytes >= total)) {
        assert.ok(performance.now() < deadline, `delta of byte ${total} is held back with no append out`);
        await new Promise((r) => setImmediate(r));
      }
    }
    await send({ content: ctl.marker() + "\n" });
    await ctl.line("data: [DONE]");

    assert.equal(fs.readFileSync(path.join(d.root, "tokens.txt"), "utf8"), deltas.join(""), "every byte lands, in order");
    assert.equal(maxInflight, 1, "one append out at a time");
    const span = appends[appends.length - 1].answered - appends[0].sent;
    const shortest = Math.min(...appends.map((a) => a.answered - a.sent));
    const roundTrips = Math.floor(span / shortest);
    assert.ok(appends.length <= roundTrips + 1, `${appends.length} appends in ${roundTrips} round trips`);
    // The bytes taken in before append j-1 was answered are all in appends 0..j.
    let sent = 0;
    let k = 0;
    appends.forEach((a, j) => {
      sent += a.bytes;
      if (j === 0) return;
      while (k < fed.length && fed[k].at < appends[j - 1].answered) k++;
      if (k > 0) assert.ok(fed[k - 1].bytes <= sent, `append ${j} holds bytes up to ${sent}, but ${fed[k - 1].bytes} had come before append ${j - 1} was answered`);
    });
  } finally {
    ctl.close();
  }
});
