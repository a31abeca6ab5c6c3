// A session's trace as plain text, for when orionctl (whose ladder is the
// full one) is not installed: one line per event, oldest first.
import type { SessionInfo, TraceEvent } from "@orion-agent/oriond-client";

import { size } from "./model";

function f(ev: TraceEvent): Record<string, unknown> {
  return ev.fields && typeof ev.fields === "object" ? (ev.fields as Record<string, unknown>) : {};
}

// eventLine says what one event was, in words.
export function eventLine(ev: TraceEvent): string {
  const x = f(ev);
  switch (ev.type) {
    case "request": {
      const ms = typeof x.duration_ms === "number" ? ` ${x.duration_ms} ms` : "";
      if (x.error_code !== undefined) return `${ev.method} refused (${x.reason || x.error_code}): ${x.error ?? ""}`;
      if (ev.method === "session.append" && typeof x.seq === "number") {
        const n = typeof x.appends === "number" ? ` ×${x.appends}` : "";
        return `session.append${n}: up to seq ${x.seq}, ${size(Number(x.bytes) || 0)} received${x.end_marker_seen ? ", end marker seen" : ""}`;
      }
      return `${ev.method} ok${ms}`;
    }
    case "session.stage":
      return `stage ${x.stage} (${size(Number(x.bytes) || 0)}, ${Number(x.lines) || 0} lines)`;
    case "session.write":
      return `wrote ${x.target}: ${size(Number(x.bytes) || 0)}, ${Number(x.lines) || 0} lines, sha256 ${String(x.sha256 ?? "").slice(0, 12)}`;
    case "session.conflict":
      return `conflict: ${x.target} (${x.event}) changed on disk`;
    case "validation":
      return `validation: ${x.summary ?? (x.ok ? "passed" : "failed")}`;
    default:
      return `${ev.type} ${JSON.stringify(ev.fields ?? {})}`;
  }
}

/** ladder renders a session and its events as a read-only text document. */
export function ladder(s: SessionInfo | undefined, sessionId: string, events: readonly TraceEvent[], more = false): string {
  const out: string[] = [`Write session ${sessionId}`];
  if (s) {
    out.push(`Target: ${s.target_file} (${s.operation})`);
    if (s.intent) out.push(`Intent: ${s.intent}`);
    out.push(`Stage:  ${s.stage}, ${size(s.bytes)}, ${s.lines} lines`);
  }
  out.push("");
  if (events.length === 0) out.push("No trace events are kept for this session (tracing off, or pruned).");
  const t0 = events.length ? Date.parse(events[0].time) : 0;
  events.forEach((ev, i) => {
    const dt = Date.parse(ev.time) - t0;
    out.push(`[${i + 1}] +${Number.isFinite(dt) ? dt : 0}ms  ${eventLine(ev)}`);
  });
  if (more) out.push("", "(more events than shown: see `orionctl trace " + sessionId + "`)");
  return out.join("\n") + "\n";
}
