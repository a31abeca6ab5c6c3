// Tool results for WritePlanTool_begin, word for word those of
// client/controller/toolresult.go: both take their texts from the generated
// Prompts (protocol/prompts.go), and the shared fixtures hold them to it.

import { ArgValue, scanArgs } from "./args";
import { OrionError } from "./errors";
import { BeginParams, FinalizeResult, Operation, Operations, PatchSpec, Prompts, RefusalAdvice, fill } from "./protocol";

/** Errors a WritePlanTool_begin tool result can carry in its "error" field. */
export const ToolErrors = {
  argumentsMissing: "arguments_missing",
  argumentsTruncated: "arguments_truncated",
  argumentsMalformed: "arguments_malformed",
  argumentsInvalid: "arguments_invalid",
  beginRefused: "begin_refused",
} as const;

const receivedPreview = 200;

export interface BeginFailed {
  ok: false;
  error: string;
  message: string;
  /** The call to make instead; patch_spec for a patch only: the object sent, or a placeholder. */
  resend?: { intent: string; target_file: string; operation: string; patch_spec?: PatchSpec | string };
  received?: string;
}

export interface BeginArgs {
  params?: Pick<BeginParams, "intent" | "target_file" | "operation" | "patch_spec">;
  ignored: string[];
  failed?: BeginFailed;
}

function knownOperation(op: string): op is Operation {
  return (Operations as readonly string[]).includes(op);
}

/** What arrived as patch_spec. */
interface PatchSpecArg {
  /** A value other than null arrived. */
  sent: boolean;
  /** The object, when it is one and valid JSON. */
  obj?: PatchSpec;
  /** obj is {}. */
  empty: boolean;
  /** Why what arrived is not a usable object. */
  problem: string;
}

function readPatchSpec(fields: Map<string, ArgValue>): PatchSpecArg {
  const v = fields.get("patch_spec");
  if (!v || v.kind === "null") return { sent: false, empty: false, problem: "" };
  if (v.kind !== "object") return { sent: true, empty: false, problem: fill(Prompts.problemPatchSpecType, { kind: article(v.kind) }) };
  // The scanner skips nested values loosely; the daemon needs valid JSON.
  let obj: PatchSpec;
  try {
    obj = JSON.parse(v.raw ?? "") as PatchSpec;
  } catch {
    return { sent: true, empty: false, problem: Prompts.problemPatchSpecJSON };
  }
  return { sent: true, obj, empty: Object.keys(obj).length === 0, problem: "" };
}

/** The patch_spec to show in a resend: the object sent, or a placeholder. */
function resendSpec(p: PatchSpecArg): PatchSpec | string {
  return p.obj && !p.empty ? p.obj : Prompts.placeholderPatchSpec;
}

/** parseBeginArgs checks a call's arguments; what is wrong says what to resend. */
export function parseBeginArgs(raw: string): BeginArgs {
  const sc = scanArgs(raw);
  const resend: NonNullable<BeginFailed["resend"]> = {
    intent: Prompts.placeholderIntent,
    target_file: Prompts.placeholderTargetFile,
    operation: Prompts.placeholderOperation,
  };
  const f = (name: string) => sc.fields.get(name);
  const intentV = f("intent");
  if (intentV?.kind === "string" && intentV.str !== "") resend.intent = intentV.str;
  const targetV = f("target_file");
  if (targetV?.kind === "string" && targetV.str !== "") resend.target_file = targetV.str;
  const opV = f("operation");
  if (opV?.kind === "string" && knownOperation(opV.str)) resend.operation = opV.str;
  const spec = readPatchSpec(sc.fields);
  if (resend.operation === "patch") resend.patch_spec = resendSpec(spec);

  const fail = (code: string, msg: string): BeginArgs => {
    const advice = resend.patch_spec !== undefined ? Prompts.resendPatch : Prompts.resend;
    const failed: BeginFailed = { ok: false, error: code, message: msg + " " + advice, resend };
    const received = preview(raw);
    if (received !== "") failed.received = received;
    return { ignored: [], failed };
  };
  switch (sc.status) {
    case "empty":
      return fail(ToolErrors.argumentsMissing, Prompts.argumentsMissing);
    case "truncated": {
      let where = "";
      if (sc.inValueOf !== "") where = fill(Prompts.truncatedInside, { field: sc.inValueOf });
      else if (sc.lastKey !== "") where = fill(Prompts.truncatedAfter, { field: sc.lastKey });
      const count = `${sc.pos} ${sc.pos === 1 ? "character" : "characters"}`;
      return fail(ToolErrors.argumentsTruncated, fill(Prompts.argumentsTruncated, { count, where }));
    }
    case "malformed":
      return fail(ToolErrors.argumentsMalformed, fill(Prompts.argumentsMalformed, { char: describeChar(sc.bad), pos: sc.pos + 1 }));
  }

  const problems: string[] = [];
  const str = (name: string): string => {
    const v = f(name);
    if (!v) problems.push(fill(Prompts.problemMissing, { field: name }));
    else if (v.kind !== "string") problems.push(fill(Prompts.problemNotString, { field: name, kind: article(v.kind) }));
    else if (v.str.trim() === "") problems.push(fill(Prompts.problemEmpty, { field: name }));
    else return v.str;
    return "";
  };
  const intent = str("intent");
  const target = str("target_file");
  const op = str("operation");
  if (op !== "" && !knownOperation(op)) {
    problems.push(fill(Prompts.problemOperation, { op }));
  }
  const patch = op === "patch";
  if (patch && !spec.sent) {
    problems.push(Prompts.problemPatchSpecMissing);
  } else if (patch && spec.problem !== "") {
    problems.push(spec.problem);
  } else if (patch && spec.empty) {
    problems.push(Prompts.problemPatchSpecEmpty);
  } else if (!patch && knownOperation(op) && spec.sent && !spec.empty) {
    // Text meant for one place would replace or extend the whole file.
    problems.push(fill(Prompts.problemPatchSpecWithout, { op }));
    resend.operation = fill(Prompts.placeholderOperationOr, { op });
    resend.patch_spec = resendSpec(spec);
  }
  if (problems.length > 0) {
    return fail(ToolErrors.argumentsInvalid, fill(Prompts.argumentsInvalid, { problems: problems.join("; ") }));
  }
  const params: NonNullable<BeginArgs["params"]> = { intent, target_file: target, operation: op as Operation };
  if (patch) params.patch_spec = spec.obj;
  const ignored = [...sc.fields.keys()].filter((k) => k !== "intent" && k !== "target_file" && k !== "operation" && k !== "patch_spec").sort();
  return { params, ignored };
}

function article(kind: string): string {
  if (kind === "array" || kind === "object") return "an " + kind;
  if (kind === "null") return "null";
  return "a " + kind;
}

/** describeChar names an unexpected character: itself in backquotes if printable ASCII, else U+XXXX. */
export function describeChar(c: string): string {
  const cp = c.codePointAt(0) ?? 0;
  if (cp > 0x20 && cp < 0x7f && c !== "`") return "`" + c + "`";
  return "U+" + cp.toString(16).toUpperCase().padStart(4, "0");
}

/** preview cuts bad arguments to receivedPreview characters. */
export function preview(s: string): string {
  const chars = Array.from(s);
  if (chars.length <= receivedPreview) return s;
  return chars.slice(0, receivedPreview).join("") + "…";
}

/** ignoredNote tells the model which members were not parameters. */
export function ignoredNote(ignored: string[]): string {
  if (ignored.length === 0) return "";
  return fill(Prompts.ignored, { names: ignored.map((n) => `"${n}"`).join(", ") });
}

/** refusedResult turns a refusal of session.begin into a tool result. */
export function refusedResult(err: unknown): BeginFailed {
  let msg = err instanceof Error ? err.message : String(err);
  if (err instanceof OrionError) {
    const advice = Object.hasOwn(RefusalAdvice, err.reason) ? RefusalAdvice[err.reason] : "";
    if (advice !== "") msg += ". " + advice;
  }
  return { ok: false, error: ToolErrors.beginRefused, message: fill(Prompts.refused, { message: msg }) };
}

/** summary says what a finalize wrote, in one line. */
export function summary(r: FinalizeResult): string {
  // Never "wrote" for a write that did not happen.
  if (r.nothing_written) return `already applied to ${r.target_file} (${r.operation}), nothing written`;
  let s = `wrote ${r.target_file} (${r.operation}): ${r.lines} lines, ${r.bytes} bytes, sha256 ${r.sha256}`;
  if ((r.files ?? []).length > 0) {
    s = `applied the edit to ${r.files!.length} file${r.files!.length === 1 ? "" : "s"}, all or none: ` +
      r.files!.map((f) => `${f.kind} ${f.target_file}${f.moved_to ? " -> " + f.moved_to : ""}`).join(", ");
  }
  if (r.operation === "append") s += `; the file is now ${r.file_bytes} bytes`;
  if ((r.trailing_bytes ?? 0) > 0) s += `; ignored ${r.trailing_bytes} bytes after the end marker`;
  for (const w of r.warnings ?? []) s += "; warning: " + w.message;
  return s;
}
