/** A notification from the daemon, kept until the controller looks for it. */
export interface Note {
  method: string;
  sessionId: string;
  params: unknown;
}

/**
 * Inbox holds notifications until the controller waits for one. The
 * connection delivers a notification the daemon sent before a reply before
 * that reply, so after an append resolves, every notification sent before
 * it is here.
 */
export class Inbox {
  private notes: Note[] = [];
  private waiters = new Set<() => void>();

  push(method: string, params: unknown): void {
    const sessionId =
      params && typeof params === "object" && typeof (params as { session_id?: unknown }).session_id === "string"
        ? (params as { session_id: string }).session_id
        : "";
    this.notes.push({ method, sessionId, params });
    for (const w of this.waiters) w();
  }

  take(method: string, sessionId: string): Note | undefined {
    const i = this.notes.findIndex((n) => n.method === method && n.sessionId === sessionId);
    if (i < 0) return undefined;
    return this.notes.splice(i, 1)[0];
  }

  takeAll(method: string): Note[] {
    const out = this.notes.filter((n) => n.method === method);
    this.notes = this.notes.filter((n) => n.method !== method);
    return out;
  }

  /** drop forgets the session's notifications with the method. */
  drop(method: string, sessionId: string): void {
    this.notes = this.notes.filter((n) => !(n.method === method && n.sessionId === sessionId));
  }

  /** wait resolves with the first matching notification, or undefined after ms. */
  wait(method: string, sessionId: string, ms: number): Promise<Note | undefined> {
    const now = this.take(method, sessionId);
    if (now) return Promise.resolve(now);
    return new Promise((resolve) => {
      const check = () => {
        const n = this.take(method, sessionId);
        if (n) finish(n);
      };
      const timer = setTimeout(() => finish(this.take(method, sessionId)), ms);
      const finish = (n: Note | undefined) => {
        clearTimeout(timer);
        this.waiters.delete(check);
        resolve(n);
      };
      this.waiters.add(check);
    });
  }
}
