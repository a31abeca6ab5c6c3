// The turns of agents in the workspace folders (whoever wrote the bytes:
// the agent's own tools, a shell, Orion), in their own view, and
// "Orion: Undo Last Turn". Texts are built here; VS Code wiring stays in
// extension.ts.
import * as path from "node:path";

import * as vscode from "vscode";

import { Methods, OrionClient, TurnFile, TurnInfo, TurnUndoResult } from "@orion-agent/oriond-client";

type TurnNode = { kind: "turn"; turn: TurnInfo } | { kind: "file"; turn: TurnInfo; file: TurnFile };

// What a change did, in the person's words.
export function changeText(f: TurnFile): string {
  switch (f.kind) {
    case "created":
      return "created";
    case "deleted":
      return "deleted";
    case "renamed":
      return `renamed from ${f.from}`;
    case "mode":
      return `mode ${f.mode_before} → ${f.mode_after}`;
    default:
      return "modified";
  }
}

// What undoing it will do to the file.
export function undoText(f: TurnFile): string {
  switch (f.kind) {
    case "created":
      return `${f.path}: removed (the turn created it)`;
    case "deleted":
      return `${f.path}: put back (the turn deleted it)`;
    case "renamed":
      return `${f.path}: renamed back to ${f.from}`;
    case "mode":
      return `${f.path}: mode back to ${f.mode_before}`;
    default:
      return `${f.path}: its content before the turn put back`;
  }
}

// outcomeText counts an undo's files by outcome: "3 reverted, 1 left".
export function outcomeText(r: TurnUndoResult): string {
  const counts = new Map<string, number>();
  for (const f of r.files ?? []) counts.set(f.outcome, (counts.get(f.outcome) ?? 0) + 1);
  return [...counts].map(([o, n]) => `${n} ${o.replace(/_/g, " ")}`).join(", ") || "no file to change";
}

export class TurnsView implements vscode.TreeDataProvider<TurnNode> {
  private readonly changed = new vscode.EventEmitter<TurnNode | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private turns: TurnInfo[] = [];
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly client: () => OrionClient,
    private readonly folders: () => string[],
  ) {
    // Turns end when the agent hands back, which no event tells the
    // window: the view asks again every few seconds.
    this.timer = setInterval(() => void this.refresh().catch(() => {}), 5_000);
  }

  dispose(): void {
    clearInterval(this.timer);
    this.changed.dispose();
  }

  async refresh(): Promise<void> {
    const out: TurnInfo[] = [];
    for (const ws of this.folders()) {
      const r = await this.client().request(Methods.turnList, { workspace_root: ws, limit: 20 });
      out.push(...(r.turns ?? []));
    }
    out.sort((a, b) => b.started_at.localeCompare(a.started_at));
    this.turns = out;
    this.changed.fire(undefined);
  }

  getTreeItem(n: TurnNode): vscode.TreeItem {
    if (n.kind === "file") {
      const item = new vscode.TreeItem(n.file.path, vscode.TreeItemCollapsibleState.None);
      item.description = changeText(n.file) + (n.file.writer === "outside" ? "" : " · through Orion");
      item.resourceUri = vscode.Uri.file(path.join(n.turn.workspace_root, n.file.path));
      return item;
    }
    const t = n.turn;
    const files = t.files?.length ?? 0;
    const item = new vscode.TreeItem(`${t.agent || "agent"} · ${t.state}`, files ? vscode.TreeItemCollapsibleState.Collapsed : vscode.TreeItemCollapsibleState.None);
    item.description = `${files} ${files === 1 ? "file" : "files"} · ${new Date(t.started_at).toLocaleString()}`;
    item.tooltip = `${t.workspace_root}\n${t.turn_id}${t.warning ? `\n${t.warning}` : ""}`;
    item.contextValue = t.state === "ended" ? "turn undoable" : "turn";
    return item;
  }

  getChildren(n?: TurnNode): TurnNode[] {
    if (!n) return this.turns.map((turn) => ({ kind: "turn", turn }));
    if (n.kind === "turn") return (n.turn.files ?? []).map((file) => ({ kind: "file", turn: n.turn, file }));
    return [];
  }

  // undoLast undoes the newest ended turn of the workspace folders, after a
  // modal confirmation that names every file and what happens to it.
  async undoLast(): Promise<void> {
    await this.refresh();
    const t = this.turns.find((x) => x.state === "ended" && (x.files?.length ?? 0) > 0);
    if (!t) {
      void vscode.window.showInformationMessage("Orion: no turn of an agent in this workspace can be undone.");
      return;
    }
    await this.undo(t);
  }

  async undo(t: TurnInfo): Promise<void> {
    const files = t.files ?? [];
    const ok = await vscode.window.showWarningMessage(
      `Undo the last turn of ${t.agent || "an agent"}? ${files.length} ${files.length === 1 ? "file goes" : "files go"} back to how ${files.length === 1 ? "it was" : "they were"} before it; a file changed since keeps that change, or is left as it is where the changes overlap.`,
      { modal: true, detail: files.map(undoText).join("\n") },
      "Undo Turn",
    );
    if (ok !== "Undo Turn") return;
    const r = await this.client().request(Methods.turnUndo, { turn_id: t.turn_id, workspace_root: t.workspace_root });
    const left = (r.files ?? []).filter((f) => f.outcome === "left").map((f) => f.path);
    const msg = r.refused ? "Orion: the undo was refused; nothing was written." : `Orion: turn undone: ${outcomeText(r)}.`;
    void vscode.window.showInformationMessage(left.length ? `${msg} Left as they are (changed since, overlapping): ${left.join(", ")}.` : msg);
    await this.refresh();
  }
}
