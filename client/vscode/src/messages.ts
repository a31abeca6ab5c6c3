// The notifications a person reads, and the actions each offers: what
// happened, to which file, and what they can do about it. Pure, so the
// texts are tested without VS Code.
import type { SessionInfo } from "@orion-agent/oriond-client";

import { displayPath, size } from "./model";

/** ActionKind names what a notification's button does. */
export type ActionKind =
  | "showDiff"
  | "finalizeAnyway"
  | "abort"
  | "showTrace"
  | "showProblems"
  | "openFile"
  | "copy"
  | "compare"
  | "undo"
  | "manageTrust";

/** Action is one button of a notification. */
export interface Action {
  title: string;
  kind: ActionKind;
  /** The session it acts on, if any. */
  sessionId?: string;
  /** copy: the text to put on the clipboard; openFile: the file. */
  value?: string;
}

/** Notice is one notification: its level, its text and its buttons. */
export interface Notice {
  level: "info" | "warning" | "error";
  text: string;
  actions: Action[];
}

// clip keeps a daemon message readable in a notification: the first
// sentences, on one line, at most max characters.
export function clip(s: string, max = 400): string {
  const one = s.replace(/\s+/g, " ").trim();
  return one.length <= max ? one : one.slice(0, max - 1) + "…";
}

/**
 * restrictedNotice: a command that starts a program (oriond, orionctl)
 * was run in Restricted Mode, where Orion starts none.
 */
export function restrictedNotice(command: string): Notice {
  return {
    level: "info",
    text:
      `Orion: ${command} starts a program, and this workspace is in Restricted Mode, where Orion starts none ` +
      `(it still shows what agents write). Trust the workspace to use it, or run the program in a terminal yourself: \`oriond run\`, \`orionctl ui\`.`,
    actions: [{ title: "Manage Workspace Trust", kind: "manageTrust" }],
  };
}

/** conflictNotice: the target changed on disk while the agent wrote it. */
export function conflictNotice(s: Pick<SessionInfo, "session_id" | "target_file">, event: string, folders: readonly string[]): Notice {
  const file = displayPath(s.target_file, folders);
  const how = event === "remove" ? "was deleted" : event === "rename" ? "was renamed or replaced" : "was changed";
  return {
    level: "warning",
    text:
      `Orion: ${file} ${how} on disk while an agent was writing it. ` +
      `Its write will be refused so your change is not lost; finalize it anyway to overwrite, or abort it.`,
    actions: [
      { title: "Finalize Anyway", kind: "finalizeAnyway", sessionId: s.session_id },
      { title: "Abort", kind: "abort", sessionId: s.session_id },
      { title: "Show Trace", kind: "showTrace", sessionId: s.session_id },
    ],
  };
}

/** truncatedNotice: the content stopped arriving before its end marker. */
export function truncatedNotice(s: SessionInfo, folders: readonly string[]): Notice {
  const file = displayPath(s.target_file, folders);
  const t = s.truncation;
  const lines = t?.lines ?? s.lines;
  let text =
    `Orion: the agent's write of ${file} stopped after ${lines} line${lines === 1 ? "" : "s"} (${size(t?.bytes ?? s.bytes)}) ` +
    `without its end marker, so ${file} was not replaced.`;
  const actions: Action[] = [];
  if (t?.incomplete_file) {
    text += ` What arrived is in ${displayPath(t.incomplete_file, folders)}.`;
    actions.push({ title: "Open Incomplete File", kind: "openFile", value: t.incomplete_file });
  }
  text += " Ask the agent to continue the file, or abort the session.";
  actions.push({ title: "Abort", kind: "abort", sessionId: s.session_id }, { title: "Show Trace", kind: "showTrace", sessionId: s.session_id });
  return { level: "warning", text, actions };
}

/** correctionsNotice: validation refused the content; the file is untouched. */
export function correctionsNotice(s: SessionInfo, folders: readonly string[]): Notice {
  const file = displayPath(s.target_file, folders);
  const findings = s.validation?.findings ?? [];
  const first = findings.find((f) => !f.preexisting) ?? findings[0];
  let text = `Orion: ${file} was not written: the agent's content failed its checks`;
  text += first ? ` (${first.line ? `line ${first.line}: ` : ""}${clip(first.message, 200)})` : "";
  const more = findings.length - 1;
  if (more > 0) text += ` and ${more} more`;
  text += ". The agent is told to send corrected content; your file is unchanged.";
  return {
    level: "warning",
    text,
    actions: [
      { title: "Show Problems", kind: "showProblems", sessionId: s.session_id },
      { title: "Show Trace", kind: "showTrace", sessionId: s.session_id },
    ],
  };
}

/** Refusal is a write the daemon refused, as the trace reports it. */
export interface Refusal {
  reason: string;
  message: string;
  method: string;
  session_id?: string;
}

/**
 * refusalNotice says why a write was refused and what the person can do;
 * undefined for reasons that are the agent's to fix.
 */
export function refusalNotice(r: Refusal, folders: readonly string[]): Notice | undefined {
  const why = clip(r.message);
  switch (r.reason) {
    case "protected_path": {
      // What the daemon tells the model to do next is not for the person.
      const reason = clip(r.message.split(/ The model must/)[0]);
      // The daemon names the exact flag that would lift it; offer to copy it.
      const flag = /--allow-protected\s+(\S+)/.exec(r.message);
      const actions: Action[] = flag ? [{ title: "Copy --allow-protected Flag", kind: "copy", value: `--allow-protected ${flag[1]}` }] : [];
      return {
        level: "warning",
        text: `Orion refused an agent's write to a protected path: ${reason} Nothing was written. Only you can lift this, by restarting oriond with --allow-protected.`,
        actions,
      };
    }
    case "outside_allowed_roots":
    case "workspace_root_not_allowed":
    case "symlink_escape": {
      const folder = folders[0];
      const actions: Action[] = folder ? [{ title: "Copy --allow-root Flag", kind: "copy", value: `--allow-root ${folder}` }] : [];
      return {
        level: "warning",
        text:
          `Orion refused an agent's write outside the folders oriond may write: ${why} Nothing was written.` +
          (folder ? ` To let agents write in this workspace, restart oriond with --allow-root ${folder}.` : ""),
        actions,
      };
    }
    case "outside_workspace":
      return {
        level: "warning",
        text: `Orion refused an agent's write outside its workspace: ${why} Nothing was written; the agent was told to write inside the workspace.`,
        actions: r.session_id ? [{ title: "Show Trace", kind: "showTrace", sessionId: r.session_id }] : [],
      };
  }
  return undefined;
}

/**
 * dirtyNotice: the agent wrote a file the person has unsaved changes in.
 * VS Code keeps the buffer; the person compares or undoes the agent's write.
 */
export function dirtyNotice(sessionId: string, target: string, folders: readonly string[], canUndo: boolean): Notice {
  const file = displayPath(target, folders);
  const actions: Action[] = [{ title: "Compare", kind: "compare", sessionId, value: target }];
  if (canUndo) actions.push({ title: "Undo the agent's write", kind: "undo", sessionId });
  return {
    level: "warning",
    text: `Orion: an agent wrote ${file} while you have unsaved changes in it. Saving now would overwrite the agent's version.`,
    actions,
  };
}

/** refusalConcerns reports whether a refusal's message names a path in one of the folders. */
export function refusalConcerns(r: Refusal, folders: readonly string[], mode: string): boolean {
  if (mode === "off") return false;
  if (mode === "all" || folders.length === 0) return true;
  return folders.some((f) => r.message.includes(f));
}
