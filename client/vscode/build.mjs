// Bundles the extension, with the Node client (client/node, from source)
// and vscode-jsonrpc, into dist/extension.js; with --tests, each unit test
// into out/test/. The Node client is this repository's own package, taken
// from source so the extension always ships the protocol of this commit.
import * as esbuild from "esbuild";
import * as fs from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const common = {
  bundle: true,
  platform: "node",
  target: "node20",
  format: "cjs",
  sourcemap: true,
  logLevel: "warning",
  alias: { "@orion-agent/oriond-client": path.join(here, "../node/src/index.ts") },
  // The client's sources import vscode-jsonrpc from ../node; it is found in
  // this package's node_modules.
  nodePaths: [path.join(here, "node_modules")],
  external: ["vscode"],
};

if (process.argv.includes("--tests")) {
  fs.rmSync(path.join(here, "out"), { recursive: true, force: true });
  const tests = fs.readdirSync(path.join(here, "test")).filter((f) => f.endsWith(".test.ts")).map((f) => path.join(here, "test", f));
  await esbuild.build({ ...common, entryPoints: tests, outdir: path.join(here, "out/test") });
} else {
  await esbuild.build({ ...common, entryPoints: [path.join(here, "src/extension.ts")], outfile: path.join(here, "dist/extension.js"), minify: true });
}
