// Starts the real oriond for tests, as internal/testdaemon does for Go:
// a fresh socket, state directory and allowed root per daemon.
import { ChildProcess, spawn, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";

let built: string | undefined;

/**
 * oriondBinary is $ORIOND_BIN, or else oriond built once from this
 * repository (for running the tests by hand with Go installed).
 */
export function oriondBinary(): string {
  if (process.env.ORIOND_BIN) return process.env.ORIOND_BIN;
  if (!built) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "oriond-bin-"));
    const out = path.join(dir, "oriond");
    const repo = path.resolve(__dirname, "../../../..");
    const r = spawnSync("go", ["build", "-o", out, "./daemon/cmd/oriond"], { cwd: repo, encoding: "utf8" });
    if (r.status !== 0) throw new Error(`ORIOND_BIN is not set and building oriond failed:\n${r.stderr ?? r.error}`);
    built = out;
    // Removed when the test process ends, as internal/testdaemon does.
    process.on("exit", () => fs.rmSync(dir, { recursive: true, force: true }));
  }
  return built;
}

/**
 * socketTempDir makes a private directory for a throwaway socket, with
 * rest its path below it: in the temp directory when the socket's path fits
 * there, else in /tmp. A private TMPDIR (macOS's /var/folders/…/T/, a CI
 * job's own) can be too long for a socket, which allows at most 103 bytes.
 */
export function socketTempDir(prefix: string, rest: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  if (path.join(dir, rest).length <= 103) return dir;
  fs.rmdirSync(dir);
  return fs.mkdtempSync(path.join("/tmp", prefix));
}

export interface Daemon {
  socket: string;
  root: string;
  stateDir: string;
  logs(): string;
  /** restart kills oriond with SIGKILL, as a crash would, and starts it again on the same state. */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

/** startDaemon runs oriond and resolves once its socket answers. */
export async function startDaemon(): Promise<Daemon> {
  // Socket paths are limited to ~104 bytes: a short directory of its own.
  const sockDir = socketTempDir("orion-", "s/oriond.sock");
  const work = fs.mkdtempSync(path.join(os.tmpdir(), "orion-node-test-"));
  fs.mkdirSync(path.join(work, "root"));
  const root = fs.realpathSync(path.join(work, "root"));
  const socket = path.join(sockDir, "s", "oriond.sock");
  const stateDir = path.join(work, "state");
  const env = { ...process.env, ORION_SOCKET: "", ORION_STATE_DIR: "", ORION_ALLOW_ROOTS: "" };
  const args = ["run", "--socket", socket, "--state-dir", stateDir, "--allow-root", root, "--log-level", "debug"];
  let logs = "";
  let proc: ChildProcess;
  let exited: Promise<void>;
  let dead = false;

  // launch starts oriond and resolves once its socket answers.
  const launch = async () => {
    proc = spawn(oriondBinary(), args, { env, stdio: ["ignore", "pipe", "pipe"] });
    proc.stdout!.on("data", (b) => (logs += b));
    proc.stderr!.on("data", (b) => (logs += b));
    dead = false;
    exited = new Promise<void>((resolve) => proc.once("exit", () => resolve()));
    void exited.then(() => (dead = true));
    const deadline = Date.now() + 30_000;
    for (;;) {
      if (dead) throw new Error(`oriond exited before serving:\n${logs}`);
      if (await canConnect(socket)) return;
      if (Date.now() > deadline) throw new Error(`oriond did not open ${socket} within 30s:\n${logs}`);
      await new Promise((r) => setTimeout(r, 10));
    }
  };
  await launch();
  return {
    socket,
    root,
    stateDir,
    logs: () => logs,
    async restart() {
      proc.kill("SIGKILL");
      await exited;
      await launch();
    },
    async stop() {
      if (!dead) {
        proc.kill("SIGTERM");
        const timer = setTimeout(() => proc.kill("SIGKILL"), 10_000);
        await exited;
        clearTimeout(timer);
      }
      fs.rmSync(sockDir, { recursive: true, force: true });
      fs.rmSync(work, { recursive: true, force: true });
    },
  };
}

function canConnect(socket: string): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.createConnection(socket);
    s.once("connect", () => {
      s.destroy();
      resolve(true);
    });
    s.once("error", () => resolve(false));
  });
}
