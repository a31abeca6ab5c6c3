// Server-sent events, as OpenAI-compatible chat completions stream them.
// Same rules as client/controller/sse.go.

export type LineKind = "other" | "blank" | "data" | "done" | "comment";

export interface SSELine {
  kind: LineKind;
  payload: string;
}

/** parseSSELine reads one line, without its line ending. */
export function parseSSELine(line: string): SSELine {
  if (line.endsWith("\r")) line = line.slice(0, -1);
  if (line === "") return { kind: "blank", payload: "" };
  if (line.startsWith(":")) {
    let p = line.slice(1);
    if (p.startsWith(" ")) p = p.slice(1);
    return { kind: "comment", payload: p };
  }
  if (line === "data" || line.startsWith("data:")) {
    let v = line.slice(4);
    if (v.startsWith(":")) v = v.slice(1);
    if (v.startsWith(" ")) v = v.slice(1);
    if (v.trim() === "[DONE]") return { kind: "done", payload: "" };
    return { kind: "data", payload: v };
  }
  return { kind: "other", payload: "" };
}

function validJSON(s: string): boolean {
  try {
    JSON.parse(s);
    return true;
  } catch {
    return false;
  }
}

/**
 * EventData gathers the data lines of one event. An event ends at a blank
 * line; recordings that drop the blank lines are common, so a data line
 * that follows complete JSON starts a new event.
 */
export class EventData {
  private lines: string[] = [];

  /** add takes a data line and returns a completed earlier event, if any. */
  add(payload: string): string | undefined {
    let done: string | undefined;
    if (this.lines.length > 0) {
      const prev = this.lines.join("\n");
      if (validJSON(prev)) {
        this.lines = [];
        done = prev;
      }
    }
    this.lines.push(payload);
    return done;
  }

  /** take returns the pending event's data, if any, and clears it. */
  take(): string | undefined {
    if (this.lines.length === 0) return undefined;
    const s = this.lines.join("\n");
    this.lines = [];
    return s;
  }
}

/** The parts of a chat.completion.chunk the controller acts on. */
export interface Chunk {
  choices?: {
    index?: number;
    delta?: {
      content?: string | null;
      tool_calls?: {
        index?: number;
        id?: string;
        function?: { name?: string; arguments?: string };
      }[];
    };
    finish_reason?: string | null;
  }[];
  error?: { message?: string; type?: string };
}
