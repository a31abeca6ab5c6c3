// The Orion extension: shows what agents write into the workspace through
// oriond. Everything about the daemon goes through the Node client
// (@orion-agent/oriond-client, bundled); this file is VS Code wiring, and
// the texts and the tree are in model.ts and messages.ts.
import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";

import * as vscode from "vscode";

import { SessionEvent, SessionInfo, SessionWatcher, defaultSocket } from "@orion-agent/oriond-client";

import { ladder } from "./ladder";
import { Action, Notice, conflictNotice, correctionsNotice, dirtyNotice, refusalConcerns, refusalNotice, restrictedNotice, truncatedNotice } from "./messages";
import { Node, SessionNode, displayPath, groupOf, inWorkspace, lastUndoable, openStages, plural, sessionNode, stageTitles, statusBar, tree, undoable } from "./model";
import { MachineSetting, machineString } from "./settings";
import { TurnsView } from "./turns";

const backupScheme = "orion-backup";
const traceScheme = "orion-trace";
// Snapshots bigger than this are not kept (the daemon's own backup is read
// first; this is the fallback for a daemon without session.content).
const maxSnapshot = 4 << 20;

let state: Orion | undefined;

export function activate(ctx: vscode.ExtensionContext): void {
  state = new Orion(ctx);
}

export function deactivate(): void {
  state?.dispose();
  state = undefined;
}

function folders(): string[] {
  return (vscode.workspace.workspaceFolders ?? []).filter((f) => f.uri.scheme === "file").map((f) => f.uri.fsPath);
}

function config(): vscode.WorkspaceConfiguration {
  return vscode.workspace.getConfiguration("orion");
}

// machine reads a setting that names a program or the socket from the
// person's user settings only (see settings.ts).
function machine(key: MachineSetting, fallback: string): string {
  return machineString(config().inspect<string>(key), fallback);
}

function socketPath(): string {
  return machine("socket", "") || defaultSocket();
}

// trusted reports whether the workspace is trusted: in Restricted Mode
// Orion shows what agents write and starts no program.
function trusted(): boolean {
  return vscode.workspace.isTrusted;
}

function run(file: string, args: string[], timeoutMs = 10_000): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(file, args, { timeout: timeoutMs, maxBuffer: 8 << 20 }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as NodeJS.ErrnoException & { code?: unknown }).code === "number" ? Number((err as { code: number }).code) : -1) : 0;
      resolve({ code, stdout: String(stdout), stderr: String(stderr) });
    });
  });
}

class Orion implements vscode.TreeDataProvider<Node>, vscode.TextDocumentContentProvider {
  private watcher: SessionWatcher;
  private readonly status: vscode.StatusBarItem;
  private readonly view: vscode.TreeView<Node>;
  private readonly changed = new vscode.EventEmitter<Node | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private readonly docChanged = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.docChanged.event;
  private readonly log: vscode.OutputChannel;
  private connected = false;
  private everConnected = false;
  private warnedDown = false;
  // What each session's target held when this window first saw the
  // session open: the fallback of the diff's left side.
  private readonly snapshots = new Map<string, string | null>();
  // Sessions already notified of, by what, so a refresh does not repeat one.
  private readonly told = new Set<string>();
  private readonly disposables: vscode.Disposable[] = [];

  constructor(private readonly ctx: vscode.ExtensionContext) {
    this.log = vscode.window.createOutputChannel("Orion");
    this.status = vscode.window.createStatusBarItem("orion.status", vscode.StatusBarAlignment.Left, 50);
    this.status.name = "Orion";
    this.view = vscode.window.createTreeView("orion.sessions", { treeDataProvider: this, showCollapseAll: true });
    this.watcher = this.newWatcher();
    const turns = new TurnsView(() => this.client(), folders);
    this.disposables.push(turns, vscode.window.createTreeView("orion.turns", { treeDataProvider: turns }));
    const reg = (id: string, fn: (...args: any[]) => unknown) =>
      this.disposables.push(
        vscode.commands.registerCommand(id, async (...args: unknown[]) => {
          try {
            await fn(...args);
          } catch (err) {
            void vscode.window.showErrorMessage(`Orion: ${err instanceof Error ? err.message : String(err)}`);
          }
        }),
      );
    reg("orion.showSessions", () => vscode.commands.executeCommand("workbench.view.extension.orion"));
    reg("orion.refresh", () => this.watcher.refresh());
    reg("orion.undoLast", () => this.undoLast());
    reg("orion.undoLastTurn", () => turns.undoLast());
    reg("orion.refreshTurns", () => turns.refresh());
    reg("orion.undoSession", () => this.pickAnd("Undo which write?", (s) => undoable(s), (s) => this.undo(s.session_id)));
    reg("orion.showTrace", () => this.pickAnd("Show the trace of which session?", () => true, (s) => this.showTrace(s.session_id)));
    reg("orion.startDaemon", () => this.startDaemon());
    reg("orion.openDashboard", () => this.openDashboard());
    reg("orion.openDiff", (n?: SessionNode | string) => this.openDiff(this.idOf(n)));
    reg("orion.undo", (n?: SessionNode | string) => this.undo(this.idOf(n)));
    reg("orion.abort", (n?: SessionNode | string) => this.abort(this.idOf(n)));
    reg("orion.finalizeAnyway", (n?: SessionNode | string) => this.finalizeAnyway(this.idOf(n)));
    reg("orion.trace", (n?: SessionNode | string) => this.showTrace(this.idOf(n)));
    this.disposables.push(
      this.log,
      this.status,
      this.view,
      this.changed,
      this.docChanged,
      vscode.workspace.registerTextDocumentContentProvider(backupScheme, this),
      vscode.workspace.registerTextDocumentContentProvider(traceScheme, this),
      vscode.workspace.onDidChangeWorkspaceFolders(() => this.render()),
      vscode.window.onDidChangeVisibleTextEditors(() => this.render()),
      vscode.workspace.onDidGrantWorkspaceTrust(() => this.render()),
      vscode.workspace.onDidChangeConfiguration((e) => {
        if (e.affectsConfiguration("orion.socket")) {
          this.watcher.stop();
          this.watcher = this.newWatcher();
        }
      }),
    );
    this.render();
    this.status.show();
    ctx.subscriptions.push({ dispose: () => this.dispose() });
  }

  dispose(): void {
    this.watcher.stop();
    for (const d of this.disposables.splice(0)) d.dispose();
  }

  private newWatcher(): SessionWatcher {
    const w = new SessionWatcher({ socket: socketPath() });
    w.on("connected", (st) => {
      this.connected = this.everConnected = true;
      this.warnedDown = false;
      this.log.appendLine(`connected to oriond ${st.version} at ${st.socket}`);
      this.render();
    });
    w.on("disconnected", (err) => {
      const was = this.connected;
      this.connected = false;
      if (was || !this.warnedDown) this.log.appendLine(`oriond: ${err.message}`);
      this.warnedDown = true;
      this.render();
    });
    w.on("sessions", (list) => {
      this.render();
      this.noticeStages(list);
    });
    w.on("event", (ev) => void this.onEvent(ev));
    w.on("dropped", (n) => this.log.appendLine(`missed ${n} trace events (read too slowly); the list is read again`));
    w.start();
    return w;
  }

  // render brings the status bar and the view up to date.
  private render(): void {
    const open = vscode.workspace.textDocuments.filter((d) => d.uri.scheme === "file").map((d) => d.uri.fsPath);
    const sb = statusBar(this.connected, this.watcher.sessions, folders(), open, trusted());
    this.status.text = sb.text;
    this.status.tooltip = sb.tooltip;
    this.status.command = sb.command;
    const writing = inWorkspace(this.watcher.sessions, folders()).filter((s) => openStages.has(s.stage)).length;
    this.view.badge = writing > 0 ? { value: writing, tooltip: `${writing} writing` } : undefined;
    this.view.message = this.connected
      ? undefined
      : this.everConnected
        ? "oriond stopped; reconnecting…"
        : trusted()
          ? "oriond is not running. Run Orion: Start Daemon."
          : "oriond is not running. Start it in a terminal with `oriond run`: in Restricted Mode Orion starts no program.";
    this.changed.fire(undefined);
  }

  // --- events -----------------------------------------------------------

  private async onEvent(ev: SessionEvent): Promise<void> {
    const ws = folders();
    switch (ev.kind) {
      case "stage":
        // The first sight of a session: keep what its target holds now, in
        // case the daemon cannot give its backup later.
        if (ev.stage === "awaiting_content" && ev.target && !this.snapshots.has(ev.session_id) && inWorkspace([{ target_file: ev.target } as SessionInfo], ws).length) {
          this.snapshots.set(ev.session_id, readSmall(ev.target));
        }
        return;
      case "conflict": {
        if (!inWorkspace([{ target_file: ev.target } as SessionInfo], ws).length) return;
        const s = this.watcher.sessions.find((x) => x.session_id === ev.session_id);
        if (s && !openStages.has(s.stage)) return;
        if (this.once(`conflict:${ev.session_id}`)) this.show(conflictNotice({ session_id: ev.session_id, target_file: ev.target }, ev.event, ws));
        return;
      }
      case "refused": {
        const mode = config().get<string>("notifyRefusals") ?? "workspace";
        if (!PathReason.has(ev.reason) || !refusalConcerns(ev, ws, mode)) return;
        const n = refusalNotice(ev, ws);
        if (n) this.show(n);
        return;
      }
      case "written": {
        if (!inWorkspace([{ target_file: ev.target } as SessionInfo], ws).length) return;
        const doc = vscode.workspace.textDocuments.find((d) => d.uri.scheme === "file" && d.uri.fsPath === ev.target);
        // An unmodified editor shows the new content by itself (VS Code
        // reloads it); one with unsaved changes would not, and saving it
        // would throw the agent's write away.
        if (doc?.isDirty && this.once(`dirty:${ev.session_id}`)) this.show(dirtyNotice(ev.session_id, ev.target, ws, true));
        return;
      }
    }
  }

  // noticeStages tells of sessions of the workspace that ended truncated or
  // need corrections, once each, from the list (which carries the details).
  private noticeStages(list: readonly SessionInfo[]): void {
    const ws = folders();
    const recent = Date.now() - 5 * 60_000;
    for (const s of inWorkspace(list, ws)) {
      if (Date.parse(s.updated_at) < recent) continue;
      if (s.stage === "needs_corrections" && this.once(`corrections:${s.session_id}`)) this.show(correctionsNotice(s, ws));
      if (s.stage === "truncated" && this.once(`truncated:${s.session_id}`)) this.show(truncatedNotice(s, ws));
    }
  }

  private once(key: string): boolean {
    if (this.told.has(key)) return false;
    this.told.add(key);
    return true;
  }

  private show(n: Notice): void {
    const fn = n.level === "error" ? vscode.window.showErrorMessage : n.level === "warning" ? vscode.window.showWarningMessage : vscode.window.showInformationMessage;
    void fn(n.text, ...n.actions.map((a) => a.title)).then((picked) => {
      const a = n.actions.find((x) => x.title === picked);
      if (a) void this.act(a);
    });
  }

  private async act(a: Action): Promise<void> {
    try {
      switch (a.kind) {
        case "finalizeAnyway":
          return await this.finalizeAnyway(a.sessionId);
        case "abort":
          return await this.abort(a.sessionId);
        case "showTrace":
          return await this.showTrace(a.sessionId);
        case "showProblems":
          return await this.openDoc(vscode.Uri.from({ scheme: traceScheme, path: `/problems-${a.sessionId}.txt`, query: `problems=${a.sessionId}` }));
        case "showDiff":
          return await (a.sessionId ? this.openDiff(a.sessionId) : undefined);
        case "openFile":
          if (a.value) await vscode.window.showTextDocument(vscode.Uri.file(a.value));
          return;
        case "copy":
          if (a.value) {
            await vscode.env.clipboard.writeText(a.value);
            void vscode.window.showInformationMessage(`Copied: ${a.value}`);
          }
          return;
        case "compare":
          if (a.value) {
            const doc = vscode.workspace.textDocuments.find((d) => d.uri.fsPath === a.value);
            // The agent's version on disk against the unsaved buffer.
            const disk = vscode.Uri.from({ scheme: backupScheme, path: a.value, query: `disk` });
            await vscode.commands.executeCommand("vscode.diff", disk, doc?.uri ?? vscode.Uri.file(a.value), `${path.basename(a.value)}: the agent's write ↔ your unsaved changes`);
          }
          return;
        case "undo":
          return await this.undo(a.sessionId);
        case "manageTrust":
          await vscode.commands.executeCommand("workbench.trust.manage");
          return;
      }
    } catch (err) {
      void vscode.window.showErrorMessage(`Orion: ${err instanceof Error ? err.message : String(err)}`);
    }
  }

  // --- the tree ---------------------------------------------------------

  getChildren(n?: Node): Node[] {
    if (!n) return tree(this.watcher.sessions, folders(), new Date());
    return n.kind === "session" ? [] : n.children;
  }

  getTreeItem(n: Node): vscode.TreeItem {
    if (n.kind !== "session") {
      const item = new vscode.TreeItem(n.label, vscode.TreeItemCollapsibleState.Expanded);
      item.description = n.description;
      item.id = n.kind === "stage" ? `stage:${n.stage}` : `tx:${n.txId}`;
      return item;
    }
    const s = n.session;
    const item = new vscode.TreeItem(n.label, vscode.TreeItemCollapsibleState.None);
    item.id = `session:${s.session_id}`;
    item.description = n.description;
    item.tooltip = n.tooltip;
    item.contextValue = n.contextValue;
    item.resourceUri = vscode.Uri.file(s.target_file);
    const group = groupOf(s);
    item.iconPath = new vscode.ThemeIcon(
      openStages.has(s.stage) ? "sync~spin" : group === "completed" ? "check" : group === "undone" ? "discard" : group === "dry_run" ? "eye" : s.stage === "aborted" ? "circle-slash" : "warning",
    );
    item.command = n.contextValue.split(" ").includes("written")
      ? { command: "orion.openDiff", title: "Show Diff", arguments: [s.session_id] }
      : { command: "vscode.open", title: "Open", arguments: [vscode.Uri.file(s.target_file)] };
    return item;
  }

  private idOf(n?: SessionNode | string): string {
    if (typeof n === "string") return n;
    if (n?.kind === "session") return n.session.session_id;
    const sel = this.view.selection[0];
    if (sel?.kind === "session") return sel.session.session_id;
    throw new Error("no session selected");
  }

  // --- documents --------------------------------------------------------

  async provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
    if (uri.scheme === backupScheme) return this.backupContent(uri);
    const q = new URLSearchParams(uri.query);
    if (q.has("problems")) return this.problems(q.get("problems")!);
    return this.traceText(q.get("session") ?? "");
  }

  // backupContent is the left side of a diff: what a session's write
  // replaced (orion-backup:/path?session=ID), or the file on disk
  // (orion-backup:/path?disk).
  private async backupContent(uri: vscode.Uri): Promise<string> {
    const q = new URLSearchParams(uri.query);
    if (q.has("disk")) return readSmall(uri.path) ?? "";
    const id = q.get("session") ?? "";
    const c = this.watcher.client;
    if (c) {
      const b = await c.backup(id);
      if (b) {
        if (!b.available) return "";
        return b.truncated ? b.content + `\n\n[Orion: the backup is ${b.total} bytes; the first ${b.bytes} are shown]\n` : b.content;
      }
    }
    const snap = this.snapshots.get(id);
    if (snap !== undefined) return snap ?? "";
    return `[Orion: this daemon does not serve session.content, and this window did not see the file before session ${id} wrote it, so its earlier content cannot be shown. Orion: Undo still restores it.]\n`;
  }

  private async openDiff(id: string): Promise<void> {
    const s = this.session(id) ?? (await this.watcher.client?.get(id));
    if (!s) throw new Error(`no session ${id}`);
    const left = vscode.Uri.from({ scheme: backupScheme, path: s.target_file, query: `session=${id}` });
    const right = vscode.Uri.file(s.target_file);
    const title = `${displayPath(s.target_file, folders())} (before the agent's write ↔ now)`;
    this.docChanged.fire(left);
    await vscode.commands.executeCommand("vscode.diff", left, right, title, { preview: true });
  }

  private async openDoc(uri: vscode.Uri): Promise<void> {
    this.docChanged.fire(uri);
    const doc = await vscode.workspace.openTextDocument(uri);
    await vscode.window.showTextDocument(doc, { preview: true });
  }

  private async showTrace(id?: string): Promise<void> {
    if (!id) return;
    await this.openDoc(vscode.Uri.from({ scheme: traceScheme, path: `/trace-${id.slice(0, 8)}.txt`, query: `session=${id}` }));
  }

  // traceText is orionctl's ladder when orionctl runs here, else (and in
  // Restricted Mode, which runs no program) the ladder drawn from
  // trace.list.
  private async traceText(id: string): Promise<string> {
    if (trusted()) {
      const r = await run(machine("orionctlPath", "orionctl"), ["--socket", socketPath(), "trace", id]);
      if (r.code === 0 && r.stdout.trim()) return r.stdout;
    }
    const c = this.client();
    const events = await c.traceList({ session_id: id, limit: 1000 });
    let s: SessionInfo | undefined;
    try {
      s = await c.get(id);
    } catch {
      s = undefined;
    }
    return ladder(s, id, events.events, events.more);
  }

  private async problems(id: string): Promise<string> {
    const s = await this.client().get(id);
    const v = s.validation ?? s.result?.validation;
    const lines = [`Checks of ${s.target_file} (session ${id}, ${s.stage})`, v?.summary ?? "", ""];
    for (const f of v?.findings ?? []) lines.push(`${f.line ? `line ${f.line}${f.column ? `:${f.column}` : ""}: ` : ""}[${f.code}] ${f.message}${f.preexisting ? " (already in the file)" : ""}`);
    return lines.join("\n") + "\n";
  }

  // --- actions ----------------------------------------------------------

  private client() {
    const c = this.watcher.client;
    if (!c) throw new Error("oriond is not running (Orion: Start Daemon)");
    return c;
  }

  private session(id: string): SessionInfo | undefined {
    return this.watcher.sessions.find((s) => s.session_id === id);
  }

  private async undo(id?: string): Promise<void> {
    if (!id) return;
    const r = await this.client().undo(id);
    const what = r.removed ? `removed ${displayPath(r.target_file, folders())} (the agent had created it)` : `restored ${displayPath(r.target_file, folders())} (${r.restored_bytes} bytes)`;
    void vscode.window.showInformationMessage(`Orion: undone: ${what}${r.files && r.files.length > 1 ? `, and ${r.files.length - 1} more files of its transaction` : ""}.`);
    await this.watcher.refresh();
  }

  private async undoLast(): Promise<void> {
    const s = lastUndoable(this.watcher.sessions, folders());
    if (!s) {
      void vscode.window.showInformationMessage("Orion: no write in this workspace can be undone.");
      return;
    }
    await this.undo(s.session_id);
  }

  private async abort(id?: string): Promise<void> {
    if (!id) return;
    await this.client().abort(id);
    void vscode.window.showInformationMessage("Orion: session aborted; nothing of it was written.");
    await this.watcher.refresh();
  }

  private async finalizeAnyway(id?: string): Promise<void> {
    if (!id) return;
    const s = this.session(id);
    const file = s ? displayPath(s.target_file, folders()) : id;
    const ok = await vscode.window.showWarningMessage(
      `Finalize anyway? ${file} changed on disk since the agent began writing it; finalizing replaces it with the agent's content (the current file is kept as a backup for undo).`,
      { modal: true },
      "Finalize Anyway",
    );
    if (ok !== "Finalize Anyway") return;
    const r = await this.client().finalize({ session_id: id, force: true });
    void vscode.window.showInformationMessage(`Orion: wrote ${displayPath(r.target_file, folders())} (${plural(r.lines, "line")}).`);
    await this.watcher.refresh();
  }

  private async pickAnd(title: string, keep: (s: SessionInfo) => boolean, then: (s: SessionInfo) => Promise<void>): Promise<void> {
    this.client();
    const ws = folders();
    const now = new Date();
    const items = inWorkspace(this.watcher.sessions, ws)
      .filter(keep)
      .map((s) => {
        const n = sessionNode(s, ws, now);
        return { label: n.label, description: `${stageTitles[groupOf(s)] ?? s.stage} · ${n.description}`, detail: s.intent, s };
      });
    if (items.length === 0) {
      void vscode.window.showInformationMessage("Orion: no session of this workspace fits.");
      return;
    }
    const picked = await vscode.window.showQuickPick(items, { title, matchOnDescription: true });
    if (picked) await then(picked.s);
  }

  private async startDaemon(): Promise<void> {
    if (this.watcher.client) {
      void vscode.window.showInformationMessage(`Orion: oriond is running at ${this.watcher.socket}.`);
      return;
    }
    if (!trusted()) return this.show(restrictedNotice("Start Daemon"));
    const oriond = machine("oriondPath", "oriond");
    // A service installed for this login is started through its manager;
    // otherwise oriond runs in a terminal the person can see and stop.
    const st = await run(oriond, ["service", "status"]);
    if (st.code === 3) {
      const r = await run(oriond, ["service", "start"], 30_000);
      if (r.code !== 0) throw new Error(`oriond service start: ${(r.stderr || r.stdout).trim()}`);
      void vscode.window.showInformationMessage("Orion: started the oriond service.");
    } else {
      const args = ["run"];
      const sock = machine("socket", "");
      if (sock) args.push("--socket", sock);
      for (const f of folders()) args.push("--allow-root", f);
      const term = vscode.window.createTerminal({ name: "oriond" });
      term.sendText([oriond, ...args].map(shellQuote).join(" "));
      term.show(true);
    }
    for (const ms of [500, 1500, 3000]) setTimeout(() => this.watcher.retryNow(), ms);
  }

  private async openDashboard(): Promise<void> {
    if (!trusted()) return this.show(restrictedNotice("Open Dashboard"));
    const ctl = machine("orionctlPath", "orionctl");
    const help = await run(ctl, ["ui", "--help"]);
    if (help.code !== 0 || !/\bui\b/.test(help.stdout)) {
      void vscode.window.showWarningMessage(`Orion: this orionctl (${ctl}) has no dashboard (orionctl ui).`);
      return;
    }
    const term = vscode.window.createTerminal({ name: "orionctl ui" });
    term.sendText([ctl, "--socket", socketPath(), "ui"].map(shellQuote).join(" "));
    term.show(true);
  }
}

const PathReason = new Set(["protected_path", "outside_allowed_roots", "outside_workspace", "workspace_root_not_allowed", "symlink_escape"]);

function shellQuote(s: string): string {
  return /^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

// readSmall reads a file as text, or null when it does not exist or is too
// big to keep.
function readSmall(file: string): string | null {
  try {
    const st = fs.statSync(file);
    if (!st.isFile() || st.size > maxSnapshot) return null;
    return fs.readFileSync(file, "utf8");
  } catch {
    return null;
  }
}
