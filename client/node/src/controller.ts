import * as readline from "node:readline";
import type { Readable } from "node:stream";

import { OrionClient } from "./client";
import { isTransient, OrionError } from "./errors";
import type { ErrorInfo, Event, Message, ToolCall } from "./events";
import { Inbox } from "./inbox";
import {
  BeginResult,
  ConflictNotification,
  FinalizeResult,
  IdleNotification,
  Notifications,
  Reasons,
  ErrorCodes,
  fill,
  Prompts,
  ToolName,
  TruncationContext,
  TruncationPolicy,
} from "./protocol";
import { replay } from "./replay";
import { WriteSession } from "./session";
import { Chunk, EventData, parseSSELine } from "./sse";
import { ignoredNote, parseBeginArgs, preview, refusedResult, summary } from "./toolresult";

/** Finish reason of a stream that ended before "data: [DONE]". */
export const FinishInterrupted = "interrupted";

const daemonIdleMs = 2000;
const daemonAutoFinalizeMs = 30000;
const waitMarginMs = 2000;

/** ControllerOptions mirror the Go controller's Options. */
export interface ControllerOptions {
  /** oriond's socket; default defaultSocket(). */
  socket?: string;
  /** Connects to the daemon; default OrionClient.connect. Tests hold the client to cut it. */
  connect?: (socket?: string) => Promise<OrionClient>;
  /** What relative target files resolve against. */
  workspaceRoot?: string;
  idleMs?: number;
  autoFinalizeMs?: number;
  truncationPolicy?: TruncationPolicy;
  /** Wait for the daemon's session.idle before writing the prompt itself (default idle + 2s). */
  idleWaitMs?: number;
  /** Wait for the auto-finalize (default its period + 2s). */
  truncateWaitMs?: number;
  /** Idle prompts per file before the auto-finalize is let end it (default 2). */
  maxIdlePrompts?: number;
  /** Largest chunk in bytes (default 16 KiB). */
  chunkBytes?: number;
  /**
   * 0 (the default): send content as soon as no append is unanswered; text
   * that arrives while one is out joins the next, so a token-per-delta
   * stream costs one append per round trip and no delta waits longer than
   * one. Above 0: hold content until chunkBytes are pending or its oldest
   * byte is this old (fewer, larger appends; each delta waits up to this).
   */
  flushAfterMs?: number;
  /** Redial attempts after a lost connection (default 8). */
  reconnects?: number;
  /** Substitute {{marker}} placeholders of a recorded stream. */
  replay?: boolean;
  /** Receives every event, in order. */
  onEvent?: (e: Event) => void;
  /** Receives each SSE comment line before the next line is read. */
  onComment?: (text: string) => void | Promise<void>;
  /** The clock, injectable for tests. */
  now?: () => number;
}

type Required_ = Required<Omit<ControllerOptions, "socket" | "workspaceRoot" | "truncationPolicy" | "onComment" | "idleMs" | "autoFinalizeMs">> &
  Pick<ControllerOptions, "socket" | "workspaceRoot" | "truncationPolicy" | "onComment" | "idleMs" | "autoFinalizeMs">;

interface Response {
  calls: Map<number, ToolCall>;
  finish: string;
}

const decoder = new TextDecoder();

/** charBoundary returns the largest n' <= n that does not cut a UTF-8 character of b. */
function charBoundary(b: Uint8Array, n: number): number {
  let k = n;
  while (k > 0 && k < b.length && (b[k] & 0xc0) === 0x80) k--;
  return k > 0 ? k : n;
}

/**
 * StreamController consumes one conversation's OpenAI-compatible stream and
 * drives oriond from it, exactly as the Go controller does (the shared
 * fixtures in client/testdata/streams hold both to it). Feed it lines in
 * order and await each.
 */
export class StreamController {
  private readonly opts: Required_;
  private cli!: OrionClient;
  private readonly inbox = new Inbox();
  private queue: WriteSession[] = [];
  private lastMarker = "";
  private readonly data = new EventData();
  private resp?: Response;
  private text = "";
  /** The background sender's run, while an append of it is unanswered (see kick). */
  private sending?: Promise<void>;

  private constructor(opts: ControllerOptions) {
    const idle = opts.idleMs && opts.idleMs > 0 ? opts.idleMs : daemonIdleMs;
    const auto = opts.autoFinalizeMs && opts.autoFinalizeMs > 0 ? opts.autoFinalizeMs : daemonAutoFinalizeMs;
    this.opts = {
      ...opts,
      connect: opts.connect ?? ((socket) => OrionClient.connect({ socket })),
      idleWaitMs: opts.idleWaitMs && opts.idleWaitMs > 0 ? opts.idleWaitMs : idle + waitMarginMs,
      truncateWaitMs: opts.truncateWaitMs && opts.truncateWaitMs > 0 ? opts.truncateWaitMs : auto + waitMarginMs,
      maxIdlePrompts: opts.maxIdlePrompts && opts.maxIdlePrompts > 0 ? opts.maxIdlePrompts : 2,
      chunkBytes: opts.chunkBytes && opts.chunkBytes > 0 ? opts.chunkBytes : 16 << 10,
      flushAfterMs: opts.flushAfterMs && opts.flushAfterMs > 0 ? opts.flushAfterMs : 0,
      reconnects: opts.reconnects && opts.reconnects > 0 ? opts.reconnects : 8,
      replay: opts.replay ?? false,
      onEvent: opts.onEvent ?? (() => {}),
      now: opts.now ?? Date.now,
    };
  }

  /** create connects to oriond. */
  static async create(opts: ControllerOptions = {}): Promise<StreamController> {
    const c = new StreamController(opts);
    c.cli = await c.dial();
    return c;
  }

  private async dial(): Promise<OrionClient> {
    const cli = await this.opts.connect(this.opts.socket);
    cli.on("notification", (method, params) => this.inbox.push(method, params));
    return cli;
  }

  /** close closes the connection; open sessions stay resumable in the daemon. */
  close(): void {
    this.cli.close();
  }

  /** marker is the end marker the model is writing toward, for replay. */
  marker(): string {
    const s = this.active();
    return s ? s.markers[0] : this.lastMarker;
  }

  /** run feeds every line of a stream, then endOfStream. */
  async run(input: Readable): Promise<void> {
    const rl = readline.createInterface({ input, crlfDelay: Infinity });
    for await (const line of rl) await this.line(line);
    await this.endOfStream();
  }

  /** line handles one line of the stream, without its line ending. */
  async line(line: string): Promise<void> {
    const l = parseSSELine(line);
    switch (l.kind) {
      case "comment":
        if (this.opts.onComment) {
          // A harness acts on the daemon as the stream before the comment
          // left it: the content sent so far is acknowledged.
          await this.settle();
          // A background append that failed is sent again now (reconnecting
          // if need be): a harness that cuts the connection next finds it in
          // use, not already broken.
          const s = this.active();
          if (s && s.retrySize > 0) await this.flush(s, false);
          await this.opts.onComment(l.payload);
        }
        return;
      case "blank": {
        const d = this.data.take();
        if (d !== undefined) await this.event(d);
        return;
      }
      case "data": {
        const d = this.data.add(l.payload);
        if (d !== undefined) await this.event(d);
        return;
      }
      case "done": {
        const d = this.data.take();
        if (d !== undefined) await this.event(d);
        await this.endResponse("");
        return;
      }
    }
  }

  /** endOfStream: the byte stream ended; an open response was cut off. */
  async endOfStream(): Promise<void> {
    const d = this.data.take();
    if (d !== undefined) await this.event(d);
    if (this.resp) await this.endResponse(FinishInterrupted);
  }

  /** finish ends the conversation: open sessions are waited for until truncated. */
  async finish(): Promise<void> {
    await this.endOfStream();
    while (this.queue.length > 0) {
      const s = this.queue[0];
      if (!s.failed && !s.truncated) {
        await this.flush(s, true);
        if (!s.failed && !s.truncated) await this.awaitTruncation(s);
      }
      this.pop(s);
    }
    this.flushText();
  }

  private active(): WriteSession | undefined {
    return this.queue[0];
  }

  private pop(s: WriteSession): void {
    this.queue = this.queue.filter((q) => q !== s);
  }

  private emit(e: Event): void {
    this.flushText();
    this.opts.onEvent(e);
  }

  private flushText(): void {
    if (this.text !== "") {
      const t = this.text;
      this.text = "";
      this.opts.onEvent({ type: "text", text: t });
    }
  }

  private async event(data: string): Promise<void> {
    if (this.opts.replay) data = replay(data, this.marker());
    let parsed: unknown;
    try {
      parsed = JSON.parse(data);
    } catch {
      parsed = undefined;
    }
    // As Go decodes it: null is an empty chunk, anything but an object is
    // not a chunk at all.
    if (parsed === undefined || (parsed !== null && (typeof parsed !== "object" || Array.isArray(parsed)))) {
      this.emit({ type: "error", error: { reason: "stream_malformed", message: "a stream event is not valid JSON and was skipped: " + preview(data) } });
      return;
    }
    const ch = (parsed ?? {}) as Chunk;
    if (ch.error) {
      this.emit({ type: "error", error: { reason: "stream_error", message: ch.error.message ?? "" } });
      return;
    }
    this.resp ??= { calls: new Map(), finish: "" };
    for (const choice of Array.isArray(ch.choices) ? ch.choices : []) {
      if ((choice.index ?? 0) !== 0) continue; // alternatives (n > 1) are not the conversation
      for (const d of choice.delta?.tool_calls ?? []) this.toolDelta(this.resp, d);
      const content = choice.delta?.content;
      if (typeof content === "string" && content !== "") await this.content(content);
      if (choice.finish_reason) this.resp.finish = choice.finish_reason;
    }
  }

  private toolDelta(r: Response, d: NonNullable<NonNullable<NonNullable<Chunk["choices"]>[number]["delta"]>["tool_calls"]>[number]): void {
    const index = d.index ?? 0;
    let call = r.calls.get(index);
    if (!call) {
      call = { id: "", name: "", arguments: "" };
      r.calls.set(index, call);
    }
    if (d.id) call.id = d.id;
    const name = d.function?.name;
    // Whole in the first fragment; some providers repeat it, others stream it.
    if (name && name !== call.name) call.name += name;
    call.arguments += d.function?.arguments ?? "";
  }

  private ordered(r: Response): ToolCall[] {
    return [...r.calls.keys()]
      .sort((a, b) => a - b)
      .map((i) => {
        const c = r.calls.get(i)!;
        return { id: c.id || `call_${i}`, name: c.name, arguments: c.arguments };
      });
  }

  /** content routes assistant text into the first open session, else through. */
  private async content(text: string): Promise<void> {
    while (text !== "") {
      const s = this.active();
      if (!s) {
        this.text += text;
        return;
      }
      if (s.pendLen === 0) s.pendSince = this.opts.now();
      const { n, marker } = s.scan(text);
      text = text.slice(n);
      if (marker !== "") {
        await this.atMarker(s, marker);
        continue;
      }
      if (this.kick(s)) await this.flush(s, false);
    }
  }

  private async endResponse(fallback: string): Promise<void> {
    const r = this.resp ?? { calls: new Map(), finish: "" };
    this.resp = undefined;
    const finish = r.finish || fallback;
    // A session begun in this response has not had its turn yet.
    const writing = this.active();
    const calls = this.ordered(r);
    for (const call of calls) {
      if (call.name !== ToolName) {
        this.emit({ type: "tool_call", tool_call: { ...call } });
        continue;
      }
      await this.begin(call);
    }
    if (writing) await this.afterResponse(writing, finish);
    for (const n of this.inbox.takeAll(Notifications.sessionConflict)) {
      const cn = n.params as ConflictNotification;
      this.emit({
        type: "conflict",
        session_id: cn.session_id,
        text: `${cn.target_file} changed on disk (${cn.event}) while it was being written; finalizing it will be refused`,
      });
    }
    const end: Event = { type: "response_end" };
    if (finish !== "") end.finish_reason = finish;
    if (calls.length > 0) end.tool_calls = calls;
    this.emit(end);
  }

  private async afterResponse(s: WriteSession, finish: string): Promise<void> {
    if (s.failed) {
      this.pop(s);
      return;
    }
    const m = s.fullMarker();
    if (m !== "") {
      await this.atMarker(s, m);
      return;
    }
    await this.flush(s, true);
    if (s.failed) {
      this.pop(s);
      return;
    }
    if (finish === "length" || finish === FinishInterrupted) await this.cutOff(s, finish);
    else await this.stopped(s);
  }

  // --- talking to the daemon ---

  private async reconnect(): Promise<void> {
    // The background sender holds the connection being replaced.
    await this.settle();
    this.cli.close();
    let last: unknown;
    for (let attempt = 0; attempt < this.opts.reconnects; attempt++) {
      if (attempt > 0) await new Promise((r) => setTimeout(r, Math.min(50 * 2 ** attempt, 2000)));
      try {
        this.cli = await this.dial();
      } catch (err) {
        last = err;
        continue;
      }
      // Resuming makes this connection the sessions' driver again, so
      // their notifications reach us.
      for (const s of this.queue) {
        if (!s.failed && !s.truncated) await this.cli.resume(s.id).catch(() => undefined);
      }
      return;
    }
    throw last;
  }

  /** retry runs op, reconnecting after a transport failure and running it again. */
  private async retry<T>(op: (reconnected: boolean) => Promise<T>): Promise<T> {
    let reconnected = false;
    for (let attempt = 0; ; attempt++) {
      try {
        return await op(reconnected);
      } catch (err) {
        if (!isTransient(err) || attempt >= this.opts.reconnects) throw err;
        await this.reconnect();
        reconnected = true;
      }
    }
  }

  private resume(id: string) {
    return this.retry(() => this.cli.resume(id));
  }

  private async appendChunk(s: WriteSession, data: Uint8Array): Promise<void> {
    const seq = s.nextSeq;
    const chunk = decoder.decode(data);
    await this.retry(async (reconnected) => {
      if (reconnected) {
        const r = await this.cli.resume(s.id);
        // Committed before the connection broke: not sent again.
        if (r.next_seq > seq) return;
      }
      await this.cli.append({ session_id: s.id, seq, chunk });
    });
    s.nextSeq = seq + 1;
    this.inbox.drop(Notifications.sessionIdle, s.id);
  }

  private async continueSession(s: WriteSession): Promise<void> {
    let res: BeginResult;
    try {
      res = await this.retry(() => this.cli.continueSession(s.id));
    } catch (err) {
      if (!(err instanceof OrionError && err.reason === Reasons.alreadyContinued && err.data.session_id)) throw err;
      // Our own earlier attempt got through before the connection broke.
      const r = await this.resume(err.data.session_id);
      res = { session_id: r.session_id, stage: r.stage, end_marker: r.end_marker, instructions: "", target_file: r.target_file, operation: r.operation };
    }
    const old = s.id;
    this.inbox.drop(Notifications.sessionTruncated, old);
    this.inbox.drop(Notifications.sessionIdle, old);
    s.continued(res);
    this.emit({
      type: "continued",
      session_id: s.id,
      text: `${s.shown}: session ${old} had ended without its end marker; the content continues in session ${s.id}`,
    });
  }

  // --- writing ---

  /**
   * The background sender sends the active session's content one append at
   * a time, so reading the model's stream never waits for the daemon: text
   * that arrives while an append is unanswered joins the next append (up to
   * chunkBytes), which goes out as soon as the reply comes. Only the plain
   * path runs there: an append refused or lost with the connection stops
   * it, and flush sends that same chunk again with its reconnects,
   * continuations and events.
   *
   * kick starts it if content is due and no append is out, and says whether
   * flush must run now instead: a background append failed, or the session
   * needs what only flush does (continuing a truncated session, dropping a
   * failed one's text).
   */
  private kick(s: WriteSession): boolean {
    if (this.sending) return false;
    if (s.retrySize > 0 || s.failed || s.truncated) return s.retrySize > 0 || this.due(s);
    if (!this.due(s)) return false;
    this.sending = this.pump(s);
    return false;
  }

  /** due: content goes now, whenever there is any unless flushAfterMs holds it back. */
  private due(s: WriteSession): boolean {
    const n = s.sendable();
    if (n === 0) return false;
    return this.opts.flushAfterMs <= 0 || n >= this.opts.chunkBytes || this.opts.now() - s.pendSince >= this.opts.flushAfterMs;
  }

  private async pump(s: WriteSession): Promise<void> {
    const cli = this.cli;
    try {
      // kick assigns this.sending after this returns its promise; the
      // finally below must run after that.
      await null;
      while (this.due(s)) {
        const n = s.sendable();
        const buf = s.bytes(s.pendLen);
        let size = Math.min(n, this.opts.chunkBytes);
        if (size < n) size = charBoundary(buf, size);
        const seq = s.nextSeq;
        try {
          await cli.append({ session_id: s.id, seq, chunk: decoder.decode(buf.subarray(0, size)) });
        } catch {
          // flush sends exactly these bytes again with this seq: the daemon
          // acknowledges a repeated chunk only if it is the same.
          s.retrySize = size;
          return;
        }
        s.sent(size);
        s.nextSeq = seq + 1;
        // An idle prompt the daemon sent before this ack is out of date.
        this.inbox.drop(Notifications.sessionIdle, s.id);
        if (s.pendLen > 0) s.pendSince = this.opts.now();
      }
    } finally {
      // Cleared in the same turn as the last due check, so text scanned
      // after it finds no sender running and starts one.
      this.sending = undefined;
    }
  }

  /** settle waits until no append is unanswered. */
  private async settle(): Promise<void> {
    while (this.sending) await this.sending;
  }

  private async flush(s: WriteSession, all: boolean): Promise<void> {
    await this.settle();
    let n = all ? s.pendLen : s.sendable();
    if (s.failed) {
      s.sent(n);
      return;
    }
    while (n > 0) {
      if (s.truncated) {
        try {
          await this.continueSession(s);
        } catch (err) {
          return this.sessionFailed(s, err, "continuing");
        }
      }
      const buf = s.bytes(s.pendLen);
      let size = Math.min(n, this.opts.chunkBytes);
      if (size < n) size = charBoundary(buf, size);
      if (s.retrySize > 0) {
        // A background append of these bytes may have landed; only the same
        // bytes are acknowledged again under its seq.
        size = Math.min(s.retrySize, n);
        s.retrySize = 0;
      }
      try {
        await this.appendChunk(s, buf.subarray(0, size));
      } catch (err) {
        if (err instanceof OrionError && err.code === ErrorCodes.sessionState) {
          // The daemon may have ended the session truncated while the model
          // was slow: continue it and send the chunk there.
          const r = await this.resume(s.id).catch(() => undefined);
          if (r?.stage === "truncated") {
            s.truncated = true;
            continue;
          }
        }
        return this.sessionFailed(s, err, "sending content");
      }
      s.sent(size);
      n -= size;
    }
    s.pendSince = this.opts.now();
  }

  private sessionFailed(s: WriteSession, err: unknown, doing: string): void {
    if (!(err instanceof OrionError)) throw err;
    s.failed = true;
    s.sent(s.pendLen);
    const info = errorInfo(err);
    this.emit({
      type: "error",
      session_id: s.id,
      error: info,
      text: `${s.shown}: ${doing} failed: ${info.message}`,
      message: user(fill(Prompts.stopped, { target: s.shown, message: info.message })),
    });
  }

  private async atMarker(s: WriteSession, marker: string): Promise<void> {
    try {
      if (s.failed) return;
      // Content before the marker line goes first: sending it may find the
      // session truncated and continue it, and then the marker line is not
      // the new session's.
      await this.flush(s, false);
      if (s.failed) return;
      const endOfInput = marker !== s.marker || s.truncated;
      if (endOfInput) s.dropLine();
      await this.flush(s, true);
      if (s.failed) return;
      await this.finalize(s, endOfInput);
    } finally {
      this.pop(s);
    }
  }

  private async finalize(s: WriteSession, endOfInput: boolean): Promise<void> {
    let res: FinalizeResult;
    try {
      res = await this.retry(() => this.cli.finalize({ session_id: s.id, end_of_input: endOfInput || undefined }));
    } catch (err) {
      if (!(err instanceof OrionError)) throw err;
      const info = errorInfo(err);
      this.emit({
        type: "error",
        session_id: s.id,
        error: info,
        text: `${s.shown} was not written: ${info.message}`,
        message: user(fill(Prompts.notWritten, { target: s.shown, message: info.message })),
      });
      return;
    }
    this.inbox.drop(Notifications.sessionFinalized, s.id);
    this.inbox.drop(Notifications.sessionIdle, s.id);
    this.emit({ type: "finalized", session_id: s.id, result: res, text: summary(res) });
  }

  // --- turns ---

  private async begin(call: ToolCall): Promise<void> {
    const a = parseBeginArgs(call.arguments);
    if (a.failed || !a.params) {
      this.toolResult(call, "", JSON.stringify(a.failed));
      return;
    }
    const p = {
      ...a.params,
      workspace_root: this.opts.workspaceRoot || undefined,
      idle_ms: this.opts.idleMs || undefined,
      auto_finalize_ms: this.opts.autoFinalizeMs || undefined,
      truncation_policy: this.opts.truncationPolicy || undefined,
    };
    let res: BeginResult;
    // A begin whose reply was lost is not retried: it would open a second
    // session. The model is told to call again instead.
    try {
      res = await this.cli.begin(p);
    } catch (err) {
      if (isTransient(err)) {
        this.toolResult(call, "", JSON.stringify(refusedResult(new Error(fill(Prompts.unreachable, { error: (err as Error).message })))));
        await this.reconnect();
        return;
      }
      this.toolResult(call, "", JSON.stringify(refusedResult(err)));
      return;
    }
    const notes: string[] = [];
    const prev = this.queue[this.queue.length - 1];
    if (prev) {
      notes.push(fill(Prompts.oneAtATime, { previous: prev.shown }));
    }
    const ign = ignoredNote(a.ignored);
    if (ign !== "") notes.push(ign);
    const s = new WriteSession(res, p.target_file);
    this.queue.push(s);
    this.lastMarker = res.end_marker;
    const ok: Record<string, unknown> = {
      ok: true,
      session_id: res.session_id,
      target_file: res.target_file,
      operation: res.operation,
      end_marker: res.end_marker,
      instructions: res.instructions,
    };
    if (notes.length > 0) ok.note = notes.join(" ");
    this.toolResult(call, res.session_id, JSON.stringify(ok));
  }

  private toolResult(call: ToolCall, sessionId: string, content: string): void {
    const e: Event = { type: "tool_result", message: { role: "tool", content, tool_call_id: call.id } };
    if (sessionId !== "") e.session_id = sessionId;
    this.emit(e);
  }

  private async cutOff(s: WriteSession, finish: string): Promise<void> {
    let r;
    try {
      r = await this.resume(s.id);
    } catch (err) {
      return this.sessionFailed(s, err, "resuming");
    }
    if (r.stage === "truncated") s.truncated = true;
    const prompt =
      r.continue_prompt || fill(Prompts.continueShort, { target: s.shown, line: r.lines + 1, marker: s.marker });
    this.emit({
      type: "continue",
      session_id: s.id,
      text: `${s.shown}: the response ended (${finish}) after ${r.lines} lines; the session stays open`,
      message: user(prompt),
    });
  }

  private async stopped(s: WriteSession): Promise<void> {
    if (s.truncated) return;
    if (s.idlePrompts >= this.opts.maxIdlePrompts) return this.awaitTruncation(s);
    const n = await this.inbox.wait(Notifications.sessionIdle, s.id, this.opts.idleWaitMs);
    // The daemon's words, so the model hears the same either way.
    const prompt =
      (n?.params as IdleNotification | undefined)?.prompt || fill(Prompts.idle, { target: s.shown, marker: s.marker });
    s.idlePrompts++;
    this.emit({
      type: "idle",
      session_id: s.id,
      text: `${s.shown}: the model stopped without the end marker`,
      message: user(prompt),
    });
  }

  private async awaitTruncation(s: WriteSession): Promise<void> {
    const n = await this.inbox.wait(Notifications.sessionTruncated, s.id, this.opts.truncateWaitMs);
    let tc = n?.params as TruncationContext | undefined;
    if (!tc) {
      // The notification may have gone to a connection we lost.
      let info;
      try {
        info = await this.retry(() => this.cli.get(s.id));
      } catch (err) {
        return this.sessionFailed(s, err, "waiting for the auto-finalize");
      }
      if (info.stage === "completed" && info.result) {
        this.emit({ type: "finalized", session_id: s.id, result: info.result, text: summary(info.result) });
        this.pop(s);
        return;
      }
      if (!info.truncation) {
        this.emit({
          type: "error",
          session_id: s.id,
          error: {
            reason: "still_open",
            message: `session ${s.id} is still ${info.stage} after ${this.opts.truncateWaitMs}ms; the daemon ends it at its auto-finalize timeout`,
          },
          text: `${s.shown}: still open, neither finished nor truncated`,
        });
        s.failed = true;
        return;
      }
      tc = info.truncation;
    }
    s.truncated = true;
    this.inbox.drop(Notifications.sessionIdle, s.id);
    let text = `${s.shown} ended without its end marker after ${tc.lines} lines (${tc.bytes} bytes); the content is kept and can be continued`;
    if (tc.incomplete_file) text += "; it was saved to " + tc.incomplete_file;
    this.emit({ type: "truncated", session_id: s.id, truncation: tc, text, message: user(tc.continue_prompt) });
  }
}

function user(content: string): Message {
  return { role: "user", content };
}

function errorInfo(err: OrionError): ErrorInfo {
  const info: ErrorInfo = { code: err.code, message: err.message };
  if (err.reason) info.reason = err.reason;
  return info;
}
