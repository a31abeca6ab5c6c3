// What a watcher of the daemon (an editor, a dashboard) needs: the trace
// events that concern sessions turned into typed events, and a connection
// that follows them and keeps the session list fresh across restarts.
import { EventEmitter } from "node:events";

import { OrionClient } from "./client";
import { OrionError } from "./errors";
import { defaultSocket } from "./paths";
import { Methods, Reasons, SessionInfo, Stage, StatusResult, TraceEvent, TraceEventNotification, Notifications } from "./protocol";

/**
 * SessionEvent is a trace event about sessions, typed. The daemon sends its
 * notifications (session.finalized, session.conflict, ...) only to the
 * client driving a session; a watcher learns of every session from the
 * trace instead, which sessionEvent reads.
 */
export type SessionEvent =
  | { kind: "stage"; session_id: string; stage: Stage; target?: string; bytes: number; lines: number; time: string }
  | { kind: "progress"; session_id: string; bytes: number; seq: number; end_marker_seen: boolean; time: string }
  | { kind: "written"; session_id: string; target: string; bytes: number; lines: number; sha256: string; time: string }
  | { kind: "conflict"; session_id: string; target: string; event: string; time: string }
  | { kind: "refused"; session_id?: string; method: string; code: number; reason: string; message: string; time: string };

/**
 * Refusal reasons a person can act on: the daemon refused a write for where
 * it would go. A watcher shows these; other refusals are the agent's to fix.
 */
export const PathRefusals: readonly string[] = [
  Reasons.protected,
  Reasons.outsideRoots,
  Reasons.outsideWorkspace,
  Reasons.workspaceNotAllowed,
  Reasons.symlinkEscape,
];

// The methods whose refusal means a write was refused.
const writeMethods = new Set<string>([Methods.sessionBegin, Methods.sessionWrite, Methods.txBegin, Methods.sessionFinalize, Methods.txCommit]);

function str(v: unknown): string {
  return typeof v === "string" ? v : "";
}
function num(v: unknown): number {
  return typeof v === "number" && Number.isFinite(v) ? v : 0;
}

/**
 * sessionEvent reads one trace event; undefined for an event no watcher of
 * sessions needs (successful requests other than appends, validation
 * details, spool and tx events, types from a newer daemon).
 */
export function sessionEvent(ev: TraceEvent): SessionEvent | undefined {
  const f = (ev.fields && typeof ev.fields === "object" ? ev.fields : {}) as Record<string, unknown>;
  const sid = ev.session_id ?? "";
  switch (ev.type) {
    case "session.stage": {
      const stage = str(f.stage) as Stage;
      if (!sid || !stage) return undefined;
      const e: SessionEvent = { kind: "stage", session_id: sid, stage, bytes: num(f.bytes), lines: num(f.lines), time: ev.time };
      if (str(f.target)) e.target = str(f.target);
      return e;
    }
    case "session.write":
      if (!sid) return undefined;
      return { kind: "written", session_id: sid, target: str(f.target), bytes: num(f.bytes), lines: num(f.lines), sha256: str(f.sha256), time: ev.time };
    case "session.conflict":
      if (!sid) return undefined;
      return { kind: "conflict", session_id: sid, target: str(f.target), event: str(f.event), time: ev.time };
    case "request": {
      const method = ev.method ?? "";
      if (f.error_code !== undefined) {
        if (!writeMethods.has(method)) return undefined;
        const e: SessionEvent = { kind: "refused", method, code: num(f.error_code), reason: str(f.reason), message: str(f.error), time: ev.time };
        if (sid) e.session_id = sid;
        return e;
      }
      if (method === Methods.sessionAppend && sid) {
        return { kind: "progress", session_id: sid, bytes: num(f.bytes), seq: num(f.seq), end_marker_seen: f.end_marker_seen === true, time: ev.time };
      }
      return undefined;
    }
  }
  return undefined;
}

/** WatcherOptions configure a SessionWatcher. */
export interface WatcherOptions {
  /** oriond's socket; default defaultSocket(). */
  socket?: string;
  /** First and longest wait between two connection attempts; default 250 ms and 5 s. */
  retryMs?: number;
  maxRetryMs?: number;
  /**
   * How often, at most, the session list is read again while sessions
   * stream; default 1000 ms. Every read is a request the daemon traces, so
   * a watcher reads on events, not on a timer.
   */
  refreshMs?: number;
  /** The most sessions one read of the list returns (pages of session.list); default 5000. */
  maxSessions?: number;
}

/** The events a SessionWatcher emits. */
export interface WatcherEvents {
  /** Connected (again): the daemon's status. */
  connected: [StatusResult];
  /** The daemon is gone or unreachable; the watcher keeps trying. */
  disconnected: [Error];
  /** The whole session list (all sessions the daemon keeps), newest first. */
  sessions: [SessionInfo[]];
  /** A session event from the trace, as sessionEvent reads it. */
  event: [SessionEvent];
  /** Events the daemon could not deliver because this watcher read too slowly. */
  dropped: [number];
}

/**
 * SessionWatcher follows the daemon for a person's view of it: it connects,
 * subscribes to the trace (trace.follow), reads the session list, emits a
 * typed SessionEvent for each relevant trace event and a fresh list after
 * each change, and reconnects, with backoff and without end, when the
 * daemon stops or restarts. It never writes: actions go through `client`.
 */
export class SessionWatcher extends EventEmitter<WatcherEvents> {
  readonly socket: string;
  private readonly retryMs: number;
  private readonly maxRetryMs: number;
  private readonly refreshMs: number;
  private readonly maxSessions: number;
  private conn?: OrionClient;
  private stopped = false;
  private retryTimer?: NodeJS.Timeout;
  private refreshTimer?: NodeJS.Timeout;
  private lastRefresh = 0;
  private wait: number;
  private list: SessionInfo[] = [];

  constructor(opts: WatcherOptions = {}) {
    super();
    this.socket = opts.socket ?? defaultSocket();
    this.retryMs = opts.retryMs ?? 250;
    this.maxRetryMs = opts.maxRetryMs ?? 5000;
    this.refreshMs = opts.refreshMs ?? 1000;
    this.maxSessions = opts.maxSessions ?? 5000;
    this.wait = this.retryMs;
  }

  /** start begins connecting; it returns at once. */
  start(): void {
    this.stopped = false;
    void this.attempt();
  }

  /** client is the live connection, for actions (undo, abort, ...), if any. */
  get client(): OrionClient | undefined {
    return this.conn?.connected ? this.conn : undefined;
  }

  /** sessions is the last list read. */
  get sessions(): readonly SessionInfo[] {
    return this.list;
  }

  /** retryNow tries to connect at once (after the person started the daemon). */
  retryNow(): void {
    if (this.stopped || this.client) return;
    clearTimeout(this.retryTimer);
    this.wait = this.retryMs;
    void this.attempt();
  }

  /** stop closes the connection and stops reconnecting. */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    clearTimeout(this.refreshTimer);
    this.conn?.close();
    this.conn = undefined;
  }

  private async attempt(): Promise<void> {
    if (this.stopped) return;
    let c: OrionClient | undefined;
    try {
      c = await OrionClient.connect({ socket: this.socket });
      if (this.stopped) {
        c.close();
        return;
      }
      c.on("notification", (method, params) => {
        if (method === Notifications.traceEvent) this.onTrace(params as TraceEventNotification);
      });
      c.once("close", () => {
        if (this.conn !== c) return;
        this.conn = undefined;
        this.emit("disconnected", new Error(`the connection to oriond at ${this.socket} closed`));
        this.schedule();
      });
      this.conn = c;
      // Subscribe first, then list: a change between the two is in both,
      // and none is missed.
      await c.traceFollow({ types: ["session.*", "request"] });
      const st = await c.status();
      this.wait = this.retryMs;
      this.emit("connected", st);
      await this.refresh();
    } catch (err) {
      if (c && this.conn === c) {
        this.conn = undefined;
        c.close();
      } else if (c) {
        c.close();
      }
      if (this.stopped) return;
      this.emit("disconnected", err instanceof Error ? err : new Error(String(err)));
      this.schedule();
    }
  }

  private schedule(): void {
    if (this.stopped) return;
    clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(() => void this.attempt(), this.wait);
    this.wait = Math.min(this.wait * 2, this.maxRetryMs);
  }

  /** refresh reads the session list now and emits it. */
  async refresh(): Promise<SessionInfo[]> {
    const c = this.client;
    if (!c) return this.list;
    this.lastRefresh = Date.now();
    try {
      const all = await c.list(true, this.maxSessions);
      all.sort((a, b) => (a.created_at < b.created_at ? 1 : a.created_at > b.created_at ? -1 : 0));
      this.list = all;
      this.emit("sessions", all);
    } catch (err) {
      // A tracing-off daemon or a refused list is not a lost connection:
      // the list stays as it was; a lost one reconnects through "close".
      if (!(err instanceof OrionError)) return this.list;
    }
    return this.list;
  }

  // refreshSoon reads the list once after a burst of events: at once after
  // a quiet spell, otherwise at most every refreshMs.
  private refreshSoon(): void {
    if (this.refreshTimer) return;
    const due = Math.max(0, this.lastRefresh + this.refreshMs - Date.now());
    this.refreshTimer = setTimeout(() => {
      this.refreshTimer = undefined;
      void this.refresh();
    }, Math.max(due, 20));
  }

  private onTrace(n: TraceEventNotification): void {
    if (n.dropped) this.emit("dropped", n.dropped);
    const ev = sessionEvent(n.event);
    if (!ev) return;
    this.emit("event", ev);
    if (ev.kind === "progress") {
      // Between two list reads, progress updates the session in place.
      const s = this.list.find((x) => x.session_id === ev.session_id);
      if (s && ev.bytes > s.bytes) s.bytes = ev.bytes;
    }
    if (ev.kind !== "refused" || ev.session_id) this.refreshSoon();
  }
}
