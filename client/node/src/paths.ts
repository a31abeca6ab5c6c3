import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

import { UntrustedSocketError } from "./errors";

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

const hint = "set XDG_RUNTIME_DIR (or ORION_SOCKET) to a directory only you can write, or remove what another user put there";

/**
 * checkSocket throws UntrustedSocketError unless the socket at socketPath
 * and its directory are the user's, by the rules of the Go client: the
 * directory belongs to the user (or root) and is not writable by others
 * unless sticky; the socket is a socket that belongs to the user. A missing
 * socket passes (connecting then says the daemon is not running).
 */
export function checkSocket(socketPath: string, uid: number | undefined = process.getuid?.()): void {
  if (uid === undefined) return;
  const dir = path.dirname(socketPath);
  let st: fs.Stats;
  try {
    st = fs.statSync(dir);
  } catch {
    return;
  }
  if (st.uid !== uid && st.uid !== 0) {
    throw new UntrustedSocketError(
      `refusing to talk to ${socketPath}: socket directory ${dir} belongs to uid ${st.uid}, not to you (uid ${uid}): another user may run a daemon of its own there; ${hint}`,
    );
  }
  if ((st.mode & 0o022) !== 0 && (st.mode & 0o1000) === 0) {
    throw new UntrustedSocketError(
      `refusing to talk to ${socketPath}: socket directory ${dir} is writable by others (mode ${(st.mode & 0o777).toString(8)}): anyone could replace the socket; run chmod go-w ${dir}, or ${hint}`,
    );
  }
  let sk: fs.Stats;
  try {
    sk = fs.lstatSync(socketPath);
  } catch {
    return;
  }
  if (!sk.isSocket()) {
    throw new UntrustedSocketError(`refusing to talk to ${socketPath}: it is not a socket`);
  }
  if (sk.uid !== uid) {
    throw new UntrustedSocketError(
      `refusing to talk to ${socketPath}: the socket belongs to uid ${sk.uid}, not to you (uid ${uid}): another user may be impersonating oriond, so nothing was sent; ${hint}`,
    );
  }
}
