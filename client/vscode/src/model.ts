// The sessions view and the status bar as data: which sessions belong to
// the open workspace, how they group, what each line and the status bar
// say. Nothing here imports vscode, so it is tested with node --test.
import * as path from "node:path";

import type { SessionInfo, Stage } from "@orion-agent/oriond-client";

/** Stages in the order their groups appear: what needs the person first. */
export const stageOrder: readonly Stage[] = [
  "streaming",
  "awaiting_content",
  "finalizing",
  "needs_corrections",
  "truncated",
  "completed",
  "aborted",
  "expired",
  "superseded",
];

/**
 * A group of the view: a stage, or "undone" (a completed write since
 * undone) and "dry_run" (a session that ended after a dry run, which the
 * daemon records as aborted), as orionctl sessions list names them.
 */
export type Group = Stage | "undone" | "dry_run";

/** groupOf is the group a session is listed under. */
export function groupOf(s: SessionInfo): Group {
  if (s.stage === "completed" && s.undone) return "undone";
  if (s.stage === "aborted" && (s.dry_run || s.result?.dry_run)) return "dry_run";
  return s.stage;
}

/** Groups in the order they appear: what needs the person first. */
export const groupOrder: readonly Group[] = [...stageOrder.slice(0, stageOrder.indexOf("completed") + 1), "undone", "dry_run", ...stageOrder.slice(stageOrder.indexOf("completed") + 1)];

/** The title of a group in the view. */
export const stageTitles: Readonly<Record<Group, string>> = {
  streaming: "Writing",
  awaiting_content: "Waiting for content",
  finalizing: "Finalizing",
  needs_corrections: "Needs corrections",
  truncated: "Truncated",
  completed: "Written",
  aborted: "Aborted",
  expired: "Expired",
  superseded: "Superseded",
  undone: "Undone",
  dry_run: "Dry run",
};

/** Stages of a session still being written. */
export const openStages: ReadonlySet<Stage> = new Set<Stage>(["awaiting_content", "streaming", "finalizing"]);

/** inside reports whether file is folder or below it (paths absolute). */
export function inside(folder: string, file: string): boolean {
  const rel = path.relative(folder, file);
  return rel === "" || (!rel.startsWith("..") && !path.isAbsolute(rel));
}

/**
 * inWorkspace keeps the sessions whose target lies in one of the folders;
 * with no folder open, every session.
 */
export function inWorkspace(sessions: readonly SessionInfo[], folders: readonly string[]): SessionInfo[] {
  if (folders.length === 0) return [...sessions];
  return sessions.filter((s) => folders.some((f) => inside(f, s.target_file)));
}

/** displayPath is file relative to the folder holding it, else as is. */
export function displayPath(file: string, folders: readonly string[]): string {
  for (const f of folders) {
    if (inside(f, file) && f !== file) {
      const rel = path.relative(f, file);
      return folders.length > 1 ? `${path.basename(f)}/${rel}` : rel;
    }
  }
  return file;
}

/**
 * size is a byte count as every Orion door writes it (orionctl, the
 * page): bytes below 1 KiB, whole KiB below 1 MiB, then MiB with one
 * decimal: "812 bytes", "1,204 KiB", "3.5 MiB".
 */
export function size(bytes: number): string {
  if (bytes < 1024) return `${bytes.toLocaleString("en-US")} ${bytes === 1 ? "byte" : "bytes"}`;
  if (bytes < 1 << 20) return `${Math.floor((bytes + 512) / 1024).toLocaleString("en-US")} KiB`;
  return `${(bytes / (1 << 20)).toFixed(1)} MiB`;
}

/** age is how long ago, in the largest whole unit: now, 12s, 5m, 3h, 2d. */
export function age(iso: string, now: Date): string {
  const s = Math.floor((now.getTime() - Date.parse(iso)) / 1000);
  if (!Number.isFinite(s) || s < 1) return "now";
  if (s < 60) return `${s}s ago`;
  if (s < 3600) return `${Math.floor(s / 60)}m ago`;
  if (s < 86400) return `${Math.floor(s / 3600)}h ago`;
  return `${Math.floor(s / 86400)}d ago`;
}

/** plural is "1 line", "2 lines". */
export function plural(n: number, one: string): string {
  return `${n} ${one}${n === 1 ? "" : "s"}`;
}

/** undoable reports whether session.undo can restore what s replaced. */
export function undoable(s: SessionInfo): boolean {
  return s.stage === "completed" && !!s.result && !s.undone && !s.result.nothing_written && !s.result.dry_run;
}

/** SessionNode is one session's line in the view. */
export interface SessionNode {
  kind: "session";
  session: SessionInfo;
  label: string;
  description: string;
  tooltip: string;
  /** Words the view's menus match: session, open, written, undoable, conflict. */
  contextValue: string;
}

/** TxNode gathers the sessions of one transaction within a stage. */
export interface TxNode {
  kind: "tx";
  txId: string;
  label: string;
  description: string;
  children: SessionNode[];
}

/** StageNode is one group of the view. */
export interface StageNode {
  kind: "stage";
  stage: Group;
  label: string;
  description: string;
  children: (SessionNode | TxNode)[];
}

export type Node = StageNode | TxNode | SessionNode;

/** sessionNode is how one session reads in the view. */
export function sessionNode(s: SessionInfo, folders: readonly string[], now: Date): SessionNode {
  const bytes = s.result?.bytes ?? s.bytes;
  const lines = s.result?.lines ?? s.lines;
  const parts = [plural(lines, "line"), size(bytes), age(s.updated_at || s.created_at, now)];
  if (s.undone) parts.unshift("undone");
  if (s.conflict && openStages.has(s.stage)) parts.unshift(`changed on disk (${s.conflict})`);
  const words = ["session"];
  if (openStages.has(s.stage)) words.push("open");
  if (s.stage === "completed" && s.result && !s.result.dry_run) words.push("written");
  if (undoable(s)) words.push("undoable");
  if (s.conflict && openStages.has(s.stage)) words.push("conflict");
  const tip = [
    s.intent ? s.intent : undefined,
    `${s.target_file} (${s.operation})`,
    `${stageTitles[groupOf(s)] ?? s.stage} · session ${s.session_id}`,
    s.tx_id ? `transaction ${s.tx_id}` : undefined,
    s.validation?.summary,
  ].filter((x): x is string => !!x);
  return {
    kind: "session",
    session: s,
    label: displayPath(s.target_file, folders),
    description: parts.join(" · "),
    tooltip: tip.join("\n"),
    contextValue: words.join(" "),
  };
}

function newestFirst(a: SessionInfo, b: SessionInfo): number {
  return a.created_at < b.created_at ? 1 : a.created_at > b.created_at ? -1 : 0;
}

/**
 * tree groups the sessions of the open folders by stage (groups in
 * stageOrder, empty ones left out), newest first within each, the sessions
 * of one transaction together under it.
 */
export function tree(sessions: readonly SessionInfo[], folders: readonly string[], now: Date): StageNode[] {
  const mine = inWorkspace(sessions, folders).sort(newestFirst);
  const groups: StageNode[] = [];
  const known = new Set<string>(groupOrder);
  const stages = [...groupOrder, ...new Set(mine.map(groupOf).filter((g) => !known.has(g)))];
  for (const stage of stages) {
    const of = mine.filter((s) => groupOf(s) === stage);
    if (of.length === 0) continue;
    const children: (SessionNode | TxNode)[] = [];
    const txs = new Map<string, TxNode>();
    for (const s of of) {
      const n = sessionNode(s, folders, now);
      if (!s.tx_id) {
        children.push(n);
        continue;
      }
      let tx = txs.get(s.tx_id);
      if (!tx) {
        tx = { kind: "tx", txId: s.tx_id, label: `Transaction ${s.tx_id.slice(0, 8)}`, description: "", children: [] };
        txs.set(s.tx_id, tx);
        children.push(tx);
      }
      tx.children.push(n);
      tx.description = plural(tx.children.length, "file");
    }
    groups.push({ kind: "stage", stage, label: stageTitles[stage] ?? stage, description: String(of.length), children });
  }
  return groups;
}

/** StatusBar is what the status bar item shows. */
export interface StatusBar {
  text: string;
  tooltip: string;
  /** The command a click runs. */
  command: "orion.showSessions" | "orion.startDaemon";
}

/**
 * statusBar says, in a few words, what oriond does for the open folders:
 * not running (a click starts it), how many files are being written (with
 * a spinner, and the progress of one that is open in an editor), what
 * needs the person, or how many were written.
 */
export function statusBar(
  connected: boolean,
  sessions: readonly SessionInfo[],
  folders: readonly string[],
  openFiles: readonly string[] = [],
  trusted = true,
): StatusBar {
  if (!connected) {
    const tooltip = trusted ? "oriond is not running: click to start it" : "oriond is not running. Start it in a terminal with `oriond run`: in Restricted Mode Orion starts no program.";
    return { text: "$(circle-slash) Orion: not running", tooltip, command: "orion.startDaemon" };
  }
  const mine = inWorkspace(sessions, folders);
  const writing = mine.filter((s) => openStages.has(s.stage)).sort(newestFirst);
  if (writing.length > 0) {
    let text = `$(sync~spin) Orion: ${writing.length} writing`;
    const open = writing.find((s) => openFiles.includes(s.target_file));
    if (open) text += ` · ${path.basename(open.target_file)} ${plural(open.lines, "line")}, ${size(open.bytes)}`;
    const tip = writing.map((s) => `${displayPath(s.target_file, folders)}: ${plural(s.lines, "line")}, ${size(s.bytes)}`).join("\n");
    return { text, tooltip: tip, command: "orion.showSessions" };
  }
  const attention = mine.filter((s) => s.stage === "needs_corrections" || s.stage === "truncated").length;
  if (attention > 0) {
    return { text: `$(warning) Orion: ${attention} to look at`, tooltip: "writes that need corrections or ended truncated", command: "orion.showSessions" };
  }
  // The same sessions as the view's Written group.
  const written = mine.filter((s) => groupOf(s) === "completed").length;
  const text = written > 0 ? `$(check) Orion: ${written} written` : "$(check) Orion";
  return { text, tooltip: "oriond is running; click to show the write sessions", command: "orion.showSessions" };
}

/** lastUndoable is the newest session of the folders whose write can be undone. */
export function lastUndoable(sessions: readonly SessionInfo[], folders: readonly string[]): SessionInfo | undefined {
  return inWorkspace(sessions, folders)
    .filter(undoable)
    .sort((a, b) => (a.updated_at < b.updated_at ? 1 : a.updated_at > b.updated_at ? -1 : 0))[0];
}
