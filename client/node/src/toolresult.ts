// Tool results for WritePlanTool_begin, word for word those of
// client/controller/toolresult.go: the shared fixtures hold both to it.

import { ArgValue, scanArgs } from "./args";
import { OrionError } from "./errors";
import { BeginParams, FinalizeResult, Operation, Operations, PatchSpec, Reasons } from "./protocol";

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

const operationPlaceholder = "<create, overwrite, append, patch or edit>";
const patchSpecPlaceholder = '<object saying where your text goes, e.g. {"type": "replace_lines", "start_line": 3, "end_line": 5}>';

const resendAdvice =
  'Call WritePlanTool_begin again with complete JSON arguments: exactly the three string fields shown in "resend", ' +
  "replacing any <...> placeholder. Put no file content in the arguments: you write the content as plain text after the call.";

/** patchResendAdvice is resendAdvice for a resend that carries a patch_spec. */
const patchResendAdvice =
  'Call WritePlanTool_begin again with complete JSON arguments: exactly the fields shown in "resend", with patch_spec as a JSON object, ' +
  "replacing any <...> placeholder. Put no file content in the arguments: you write the text as plain text after the call.";

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
  if (v.kind !== "object") return { sent: true, empty: false, problem: `"patch_spec" must be an object, not ${article(v.kind)}` };
  // The scanner skips nested values loosely; the daemon needs valid JSON.
  let obj: PatchSpec;
  try {
    obj = JSON.parse(v.raw ?? "") as PatchSpec;
  } catch {
    return { sent: true, empty: false, problem: '"patch_spec" is not valid JSON' };
  }
  return { sent: true, obj, empty: Object.keys(obj).length === 0, problem: "" };
}

/** The patch_spec to show in a resend: the object sent, or a placeholder. */
function resendSpec(p: PatchSpecArg): PatchSpec | string {
  return p.obj && !p.empty ? p.obj : patchSpecPlaceholder;
}

/** parseBeginArgs checks a call's arguments; what is wrong says what to resend. */
export function parseBeginArgs(raw: string): BeginArgs {
  const sc = scanArgs(raw);
  const resend: NonNullable<BeginFailed["resend"]> = {
    intent: "<one sentence: what this write does>",
    target_file: "<path of the file to write>",
    operation: operationPlaceholder,
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
    const advice = resend.patch_spec !== undefined ? patchResendAdvice : resendAdvice;
    const failed: BeginFailed = { ok: false, error: code, message: msg + " " + advice, resend };
    const received = preview(raw);
    if (received !== "") failed.received = received;
    return { ignored: [], failed };
  };
  switch (sc.status) {
    case "empty":
      return fail(ToolErrors.argumentsMissing, "WritePlanTool_begin arrived without arguments, so no file was started.");
    case "truncated": {
      let where = "";
      if (sc.inValueOf !== "") where = `, inside the value of "${sc.inValueOf}"`;
      else if (sc.lastKey !== "") where = `, after the value of "${sc.lastKey}"`;
      return fail(
        ToolErrors.argumentsTruncated,
        `The arguments of WritePlanTool_begin were cut off after ${sc.pos} ${sc.pos === 1 ? "character" : "characters"}${where}: they are not complete JSON, so no file was started.`,
      );
    }
    case "malformed":
      return fail(
        ToolErrors.argumentsMalformed,
        `The arguments of WritePlanTool_begin are not valid JSON: unexpected ${describeChar(sc.bad)} at character ${sc.pos + 1}, so no file was started.`,
      );
  }

  const problems: string[] = [];
  const str = (name: string): string => {
    const v = f(name);
    if (!v) problems.push(`"${name}" is missing`);
    else if (v.kind !== "string") problems.push(`"${name}" must be a string, not ${article(v.kind)}`);
    else if (v.str.trim() === "") problems.push(`"${name}" is empty`);
    else return v.str;
    return "";
  };
  const intent = str("intent");
  const target = str("target_file");
  const op = str("operation");
  if (op !== "" && !knownOperation(op)) {
    problems.push(`"operation" must be create, overwrite, append, patch or edit, not "${op}"`);
  }
  const patch = op === "patch";
  if (patch && !spec.sent) {
    problems.push('"patch_spec" is missing: operation patch needs it to say where your text goes');
  } else if (patch && spec.problem !== "") {
    problems.push(spec.problem);
  } else if (patch && spec.empty) {
    problems.push('"patch_spec" is empty: operation patch needs its type and fields to say where your text goes');
  } else if (!patch && knownOperation(op) && spec.sent && !spec.empty) {
    // Text meant for one place would replace or extend the whole file.
    problems.push(`"patch_spec" goes only with operation patch, not "${op}": use patch to change only the part it names, or leave patch_spec out`);
    resend.operation = `<patch, or ${op} without patch_spec>`;
    resend.patch_spec = resendSpec(spec);
  }
  if (problems.length > 0) {
    return fail(
      ToolErrors.argumentsInvalid,
      "The arguments of WritePlanTool_begin are incomplete: " + problems.join("; ") + ". No file was started.",
    );
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
  return (
    `The argument(s) ${ignored.map((n) => `"${n}"`).join(", ")} are not parameters of WritePlanTool_begin and were ignored; ` +
    "write the file's content as plain text, as the instructions say."
  );
}

/** refusedResult turns a refusal of session.begin into a tool result. */
export function refusedResult(err: unknown): BeginFailed {
  let msg = err instanceof Error ? err.message : String(err);
  if (err instanceof OrionError) {
    const advice = refusalAdvice(err.reason);
    if (advice !== "") msg += ". " + advice;
  }
  return { ok: false, error: ToolErrors.beginRefused, message: "No file was started: " + msg };
}

function refusalAdvice(reason: string): string {
  switch (reason) {
    case Reasons.targetExists:
      return 'Use "operation": "overwrite" to replace it or "append" to add to it, or choose another target_file.';
    case Reasons.outsideRoots:
    case Reasons.symlinkEscape:
    case Reasons.relativePath:
      return "Choose a target_file inside the workspace.";
    case Reasons.parentMissing:
      return "Choose a target_file in a directory that exists.";
    case Reasons.isDirectory:
    case Reasons.specialFile:
      return "Choose a target_file that is a regular file.";
    case Reasons.targetMissing:
      return 'patch and edit change an existing file: use "operation": "create" to write a new one, or choose a target_file that exists.';
    case Reasons.invalidPatchSpec:
      return "Correct patch_spec as this says and call WritePlanTool_begin again.";
  }
  return "";
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
