import { EventEmitter } from "node:events";
import * as net from "node:net";
import {
  createMessageConnection,
  MessageConnection,
  ResponseError,
  StreamMessageReader,
  StreamMessageWriter,
} from "vscode-jsonrpc/node";

import { ConnectionLostError, DaemonUnreachableError, OrionError } from "./errors";
import { checkSocket, defaultSocket } from "./paths";
import {
  AbortResult,
  AppendParams,
  AppendResult,
  BeginParams,
  BeginResult,
  CleanParams,
  CleanResult,
  ConflictNotification,
  ContentParams,
  ContentResult,
  FinalizeParams,
  FinalizeResult,
  IdleNotification,
  ListParams,
  ListResult,
  Method,
  Methods,
  MethodTypes,
  Notifications,
  Reasons,
  ResumeResult,
  SessionInfo,
  StatusResult,
  ToolDefinition,
  TruncationContext,
  TxBeginParams,
  TxBeginResult,
  TxCommitParams,
  TxCommitResult,
  TxInfo,
  TraceFollowParams,
  TraceFollowResult,
  TraceListParams,
  TraceListResult,
  UndoResult,
} from "./protocol";

/** ClientOptions configure OrionClient.connect. */
export interface ClientOptions {
  /** oriond's socket; default defaultSocket(). */
  socket?: string;
  /** How many dial attempts reconnect() makes; default 8 (about seven seconds with backoff). */
  reconnectAttempts?: number;
}

/** The events an OrionClient emits. */
export interface ClientEvents {
  idle: [IdleNotification];
  truncated: [TruncationContext];
  finalized: [FinalizeResult];
  conflict: [ConflictNotification];
  /** Every notification, including ones this package does not know. */
  notification: [string, unknown];
  /** The connection ended (a reconnect follows only if you call reconnect). */
  close: [];
  reconnect: [];
}

// vscode-jsonrpc rejects requests pending on a closed connection with these
// codes; the daemon never uses them.
const transportCodes = new Set([-32097, -32096, 1, 2]);

/**
 * OrionClient is one connection to oriond over its Unix socket (JSON-RPC 2.0
 * with Content-Length framing, via vscode-jsonrpc): a typed method per
 * protocol method, notifications as events, and reconnect with resume.
 */
export class OrionClient extends EventEmitter<ClientEvents> {
  readonly socket: string;
  private readonly attempts: number;
  private conn?: MessageConnection;
  private sock?: net.Socket;
  private closed = true;

  private constructor(opts: ClientOptions) {
    super();
    this.socket = opts.socket ?? defaultSocket();
    this.attempts = opts.reconnectAttempts ?? 8;
  }

  /** connect dials the daemon; it rejects with DaemonUnreachableError. */
  static async connect(opts: ClientOptions = {}): Promise<OrionClient> {
    const c = new OrionClient(opts);
    await c.open();
    return c;
  }

  /** connected reports whether the connection is up. */
  get connected(): boolean {
    return !this.closed;
  }

  private async open(): Promise<void> {
    const sock = await dial(this.socket);
    const conn = createMessageConnection(new StreamMessageReader(sock), new StreamMessageWriter(sock));
    conn.onNotification((method: string, params: unknown) => this.dispatch(method, params));
    const lost = () => {
      if (this.sock !== sock || this.closed) return;
      this.closed = true;
      // Disposing rejects the requests still waiting for a reply.
      conn.dispose();
      this.emit("close");
    };
    sock.on("close", lost);
    sock.on("error", lost);
    conn.onClose(lost);
    conn.onError(() => lost());
    conn.listen();
    this.sock = sock;
    this.conn = conn;
    this.closed = false;
  }

  private dispatch(method: string, params: unknown): void {
    this.emit("notification", method, params);
    switch (method) {
      case Notifications.sessionIdle:
        this.emit("idle", params as IdleNotification);
        break;
      case Notifications.sessionTruncated:
        this.emit("truncated", params as TruncationContext);
        break;
      case Notifications.sessionFinalized:
        this.emit("finalized", params as FinalizeResult);
        break;
      case Notifications.sessionConflict:
        this.emit("conflict", params as ConflictNotification);
        break;
    }
  }

  /** close ends the connection. Open sessions stay in the daemon. */
  close(): void {
    const sock = this.sock;
    if (!this.closed) {
      this.closed = true;
      this.conn?.dispose();
      this.emit("close");
    }
    sock?.destroy();
  }

  /**
   * reconnect replaces the connection, retrying with backoff. Sessions are
   * not touched: resume them (or use appendReliably) to claim them again.
   */
  async reconnect(): Promise<void> {
    this.close();
    let last: unknown;
    for (let attempt = 0; attempt < this.attempts; attempt++) {
      if (attempt > 0) await sleep(Math.min(50 * 2 ** attempt, 2000));
      try {
        await this.open();
        this.emit("reconnect");
        return;
      } catch (err) {
        last = err;
      }
    }
    throw last;
  }

  /**
   * call sends one request. A refusal rejects with OrionError; a broken
   * connection with ConnectionLostError.
   */
  async call<R>(method: string, params?: object): Promise<R> {
    if (this.closed || !this.conn) {
      throw new ConnectionLostError(`the connection to oriond at ${this.socket} is closed`);
    }
    try {
      return params === undefined
        ? await this.conn.sendRequest<R>(method)
        : await this.conn.sendRequest<R>(method, params);
    } catch (err) {
      if (err instanceof ResponseError && !transportCodes.has(err.code)) {
        throw new OrionError(err.code, err.message, err.data as object | undefined);
      }
      const msg = err instanceof Error ? err.message : String(err);
      throw new ConnectionLostError(`${method}: the connection to oriond broke: ${msg}`);
    }
  }

  /** request sends one request of method, typed by the generated MethodTypes. */
  request<M extends Method>(method: M, params: MethodTypes[M]["params"]): Promise<MethodTypes[M]["result"]> {
    return this.call(method, params);
  }

  begin(p: BeginParams): Promise<BeginResult> {
    return this.call(Methods.sessionBegin, p);
  }
  append(p: AppendParams): Promise<AppendResult> {
    return this.call(Methods.sessionAppend, p);
  }
  finalize(p: FinalizeParams): Promise<FinalizeResult> {
    return this.call(Methods.sessionFinalize, p);
  }
  abort(sessionId: string): Promise<AbortResult> {
    return this.call(Methods.sessionAbort, { session_id: sessionId });
  }
  get(sessionId: string): Promise<SessionInfo> {
    return this.call(Methods.sessionGet, { session_id: sessionId });
  }
  /**
   * list returns the open sessions, or with all every session the daemon
   * keeps, following session.list's pages; max stops after that many.
   */
  async list(all = false, max = Infinity): Promise<SessionInfo[]> {
    const out: SessionInfo[] = [];
    const p: ListParams = { all };
    for (;;) {
      const r = await this.listPage(p);
      out.push(...(r.sessions ?? []));
      // A cursor that does not move would loop forever.
      if (!r.next_cursor || r.next_cursor === p.cursor || !r.sessions?.length || out.length >= max) return out;
      p.cursor = r.next_cursor;
    }
  }
  /** listPage calls session.list once: one page, and the cursor of the next. */
  listPage(p: ListParams): Promise<ListResult> {
    return this.request(Methods.sessionList, p);
  }
  resume(sessionId: string): Promise<ResumeResult> {
    return this.call(Methods.sessionResume, { session_id: sessionId });
  }
  /** continue chains a new session to a truncated one (session.continue). */
  continueSession(sessionId: string): Promise<BeginResult> {
    return this.call(Methods.sessionContinue, { session_id: sessionId });
  }
  /** undo restores what a completed session replaced (session.undo). */
  undo(sessionId: string): Promise<UndoResult> {
    return this.request(Methods.sessionUndo, { session_id: sessionId });
  }
  /**
   * content reads, bounded and read-only, what a session holds: the content
   * streamed so far (source "streamed") or the backup of the file its write
   * replaced (source "backup") (session.content).
   */
  content(p: ContentParams): Promise<ContentResult> {
    return this.request(Methods.sessionContent, p);
  }
  /**
   * backup reads the content a completed session's write replaced (what
   * undo would put back), bounded by maxBytes. It resolves undefined when
   * the daemon does not serve session.content (one older than the method),
   * so a caller can say so instead of failing.
   */
  async backup(sessionId: string, maxBytes?: number): Promise<ContentResult | undefined> {
    const p: ContentParams = { session_id: sessionId, source: "backup" };
    if (maxBytes !== undefined) p.max_bytes = maxBytes;
    try {
      return await this.content(p);
    } catch (err) {
      if (err instanceof OrionError && err.reason === Reasons.unknownMethod) return undefined;
      throw err;
    }
  }
  /** traceList returns stored trace events that match (trace.list). */
  traceList(p: TraceListParams = {}): Promise<TraceListResult> {
    return this.request(Methods.traceList, p);
  }
  /**
   * traceFollow sends each new matching trace event to this connection as a
   * trace.event notification until it closes (trace.follow).
   */
  traceFollow(p: TraceFollowParams = {}): Promise<TraceFollowResult> {
    return this.request(Methods.traceFollow, p);
  }
  clean(p: CleanParams = {}): Promise<CleanResult> {
    return this.call(Methods.sessionClean, p);
  }
  /** txBegin opens one session per file; stream each, then txCommit writes all or none. */
  txBegin(p: TxBeginParams): Promise<TxBeginResult> {
    return this.call(Methods.txBegin, p);
  }
  /** txCommit checks every file, then writes all of them or none. */
  txCommit(p: TxCommitParams): Promise<TxCommitResult> {
    return this.call(Methods.txCommit, p);
  }
  txAbort(txId: string): Promise<TxInfo> {
    return this.call(Methods.txAbort, { tx_id: txId });
  }
  txGet(txId: string): Promise<TxInfo> {
    return this.call(Methods.txGet, { tx_id: txId });
  }
  status(): Promise<StatusResult> {
    return this.call(Methods.daemonStatus);
  }
  async toolDefinitions(): Promise<ToolDefinition[]> {
    const r = await this.call<{ tools: ToolDefinition[] }>(Methods.toolsDefinitions);
    return r.tools;
  }

  /**
   * appendReliably appends one chunk and survives a broken connection: it
   * reconnects, asks session.resume where the session stands, and resends
   * only if the chunk was not committed (next_seq not past it). The daemon
   * acknowledges a repeated seq with the same bytes as a duplicate, so this
   * never stores a chunk twice.
   */
  async appendReliably(p: AppendParams): Promise<AppendResult | undefined> {
    let reconnected = false;
    for (let attempt = 0; ; attempt++) {
      try {
        if (reconnected) {
          const r = await this.resume(p.session_id);
          if (r.next_seq > p.seq) return undefined;
        }
        return await this.append(p);
      } catch (err) {
        if (!(err instanceof ConnectionLostError) || attempt >= this.attempts) throw err;
        await this.reconnect();
        reconnected = true;
      }
    }
  }
}

function dial(path: string): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    try {
      // Before anything is sent: the socket and its directory must be ours.
      checkSocket(path);
    } catch (err) {
      reject(err);
      return;
    }
    const sock = net.createConnection(path);
    const fail = (err: Error) =>
      reject(new DaemonUnreachableError(`oriond is not reachable at ${path} (start it with \`oriond run\`): ${err.message}`));
    sock.once("error", fail);
    sock.once("connect", () => {
      sock.off("error", fail);
      resolve(sock);
    });
  });
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
