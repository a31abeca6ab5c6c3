// The argument cases shared with the Go suite (client/testdata/args): the
// same streamed arguments must give the same tool result in both languages.
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { test } from "node:test";

import { replay, turnMessages } from "../src";
import { parseBeginArgs } from "../src/toolresult";

interface ArgsCase {
  name: string;
  arguments: string;
  want: unknown;
}

const cases = JSON.parse(
  fs.readFileSync(path.resolve(__dirname, "../../../testdata/args/cases.json"), "utf8"),
) as ArgsCase[];

function outcome(raw: string): unknown {
  const a = parseBeginArgs(raw);
  if (a.failed) return JSON.parse(JSON.stringify(a.failed));
  const p = a.params!;
  const params: Record<string, unknown> = { intent: p.intent, target_file: p.target_file, operation: p.operation };
  if (p.patch_spec !== undefined) params.patch_spec = p.patch_spec;
  return { params, ignored: a.ignored };
}

for (const c of cases) {
  test(`arguments ${c.name}`, () => {
    assert.deepEqual(outcome(c.arguments), c.want);
  });
}

test("every prefix of good arguments is answered with what to resend", () => {
  const full = '{"intent":"Write it","target_file":"a.md","operation":"create"}';
  for (let i = 0; i < full.length; i++) {
    const a = parseBeginArgs(full.slice(0, i));
    assert.ok(a.failed, `prefix ${JSON.stringify(full.slice(0, i))} was accepted`);
    assert.ok(a.failed.resend && a.failed.message.includes("Call WritePlanTool_begin again"));
  }
});

test("replay substitutes the marker and slices of it", () => {
  const m = "__END_WRITE_0123456789ab__";
  assert.equal(replay("a {{marker}} b", m), `a ${m} b`);
  assert.equal(replay("{{marker:0:3}}|{{marker:3:26}}", m), `__E|ND_WRITE_0123456789ab__`);
  assert.equal(replay("{{marker:20:99}}", m), "89ab__");
  assert.equal(replay("{{marker:30:40}}", m), "");
});

test("turnMessages: the assistant's message, then tool results, then prompts", () => {
  const msgs = turnMessages([
    { type: "text", text: "Writing it." },
    { type: "tool_result", session_id: "s", message: { role: "tool", tool_call_id: "call_1", content: "{}" } },
    { type: "idle", session_id: "s", message: { role: "user", content: "finish?" } },
    { type: "response_end", finish_reason: "tool_calls", tool_calls: [{ id: "call_1", name: "WritePlanTool_begin", arguments: "{}" }] },
  ]);
  assert.deepEqual(msgs, [
    {
      role: "assistant",
      content: "Writing it.",
      tool_calls: [{ id: "call_1", type: "function", function: { name: "WritePlanTool_begin", arguments: "{}" } }],
    },
    { role: "tool", content: "{}", tool_call_id: "call_1" },
    { role: "user", content: "finish?" },
  ]);
});
