import type { BeginResult, Operation } from "./protocol";

const enc = new TextEncoder();

/**
 * WriteSession is the controller's side of one write session: where the
 * model's text stands against the end marker, and the content not yet sent.
 * Same bookkeeping as client/controller/session.go, in UTF-8 bytes, so
 * chunking and marker positions agree with the Go controller and the daemon.
 */
export class WriteSession {
  /** The daemon session receiving content now; changes on a continuation. */
  id: string;
  marker: string;
  /** Markers the model may close this file with. */
  markers: string[];
  readonly shown: string;
  readonly target: string;
  readonly op: Operation;
  nextSeq = 1;
  /** Content not yet sent, and when its oldest byte came. */
  pend: Uint8Array[] = [];
  pendLen = 0;
  pendSince = 0;
  /** Size of the chunk at the front of pend whose background append failed: the next append sends exactly it again. */
  retrySize = 0;
  /** The current line, kept while it may still be a marker line. */
  line = "";
  candidate = true;
  /** Byte offset in pend where the current line starts; -1 once partly sent. */
  lineStart = 0;
  idlePrompts = 0;
  truncated = false;
  failed = false;

  constructor(res: BeginResult, shown: string) {
    this.id = res.session_id;
    this.marker = res.end_marker;
    this.markers = [res.end_marker];
    this.shown = shown;
    this.target = res.target_file;
    this.op = res.operation;
  }

  /**
   * scan takes the model's text up to the end of a marker line (its newline
   * included) or all of it into pend. It returns how many UTF-16 units it
   * took and the marker when a marker line ended.
   */
  scan(text: string): { n: number; marker: string } {
    let from = 0;
    for (let i = 0; i < text.length; i++) {
      const ch = text[i];
      if (ch === "\n") {
        if (this.candidate) {
          const m = this.fullMarker();
          if (m !== "") {
            this.push(text.slice(from, i + 1));
            return { n: i + 1, marker: m };
          }
        }
        // Offsets in pend are bytes, so the text up to here goes in first.
        this.push(text.slice(from, i + 1));
        from = i + 1;
        this.candidate = true;
        this.line = "";
        this.lineStart = this.pendLen;
        continue;
      }
      if (this.candidate) {
        this.line += ch;
        if (!this.mayBeMarker()) {
          this.candidate = false;
          this.line = "";
        }
      }
    }
    this.push(text.slice(from));
    return { n: text.length, marker: "" };
  }

  private push(s: string): void {
    if (s === "") return;
    const b = enc.encode(s);
    this.pend.push(b);
    this.pendLen += b.length;
  }

  private rest(): string {
    return this.line.replace(/^[ \t]+/, "");
  }

  private mayBeMarker(): boolean {
    const r = this.rest();
    return this.markers.some((m) => m.startsWith(r) || (r.startsWith(m) && /^[ \t\r]*$/.test(r.slice(m.length))));
  }

  /** fullMarker returns the marker the current line is, or "". */
  fullMarker(): string {
    if (!this.candidate) return "";
    const r = this.rest();
    return this.markers.find((m) => r.startsWith(m) && /^[ \t\r]*$/.test(r.slice(m.length))) ?? "";
  }

  /** sendable is how many pending bytes may go now: all but a possible marker line. */
  sendable(): number {
    return this.candidate && this.lineStart >= 0 ? this.lineStart : this.pendLen;
  }

  /** bytes returns the first n pending bytes. */
  bytes(n: number): Uint8Array {
    const all = this.pend.length === 1 ? this.pend[0] : Buffer.concat(this.pend);
    this.pend = all.length > 0 ? [all] : [];
    return all.subarray(0, n);
  }

  /** sent drops n bytes from the front of pend after they were acknowledged. */
  sent(n: number): void {
    const all = this.bytes(this.pendLen);
    const left = all.subarray(n);
    this.pend = left.length > 0 ? [left] : [];
    this.pendLen = left.length;
    if (this.lineStart >= 0) {
      this.lineStart -= n;
      if (this.lineStart < 0) this.lineStart = -1;
    }
  }

  /** dropLine removes the current (marker) line from pend. */
  dropLine(): void {
    if (this.lineStart < 0) return;
    const all = this.bytes(this.pendLen);
    const kept = all.subarray(0, this.lineStart);
    this.pend = kept.length > 0 ? [kept] : [];
    this.pendLen = kept.length;
  }

  /** continued switches to the chained session that continues this one. */
  continued(res: BeginResult): void {
    this.id = res.session_id;
    this.marker = res.end_marker;
    this.nextSeq = 1;
    this.truncated = false;
    this.markers.push(res.end_marker);
  }
}
