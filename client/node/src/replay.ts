const placeholder = /\{\{marker(?::(\d+):(\d+))?\}\}/g;

/**
 * replay substitutes {{marker}} and {{marker:FROM:TO}} (a byte slice; the
 * marker is ASCII) in a recorded stream line with the live session's end
 * marker. A recording's own marker belonged to the session it was recorded
 * with. Slices out of range are clamped. Same as Go's controller.Replay.
 */
export function replay(line: string, marker: string): string {
  return line.replace(placeholder, (_m, from?: string, to?: string) => {
    if (from === undefined || to === undefined) return marker;
    const t = Math.min(Number(to), marker.length);
    const f = Math.min(Number(from), t);
    return marker.slice(f, t);
  });
}
