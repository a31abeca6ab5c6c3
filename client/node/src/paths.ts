import * as os from "node:os";
import * as path from "node:path";

/**
 * defaultSocket is where oriond listens unless told otherwise, by the same
 * rule as the Go client: $ORION_SOCKET, else $XDG_RUNTIME_DIR/orion/oriond.sock,
 * else <tmp>/orion-<uid>/oriond.sock.
 */
export function defaultSocket(env: NodeJS.ProcessEnv = process.env): string {
  if (env.ORION_SOCKET) return env.ORION_SOCKET;
  const runtime = env.XDG_RUNTIME_DIR;
  if (runtime && path.isAbsolute(runtime)) return path.join(runtime, "orion", "oriond.sock");
  // os.tmpdir() follows $TMPDIR, as Go's os.TempDir does.
  const uid = typeof process.getuid === "function" ? process.getuid() : 0;
  return path.join(os.tmpdir(), `orion-${uid}`, "oriond.sock");
}
