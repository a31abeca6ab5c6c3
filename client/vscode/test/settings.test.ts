// The settings that name a program or the socket come from the person's
// user settings, never from a workspace's .vscode/settings.json.
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { test } from "node:test";

import { machineSettings, machineString } from "../src/settings";

test("a workspace's or a folder's value is never read", () => {
  const fromRepo = { defaultValue: "orionctl", workspaceValue: "./evil.sh", workspaceFolderValue: "/repo/evil.sh" };
  assert.equal(machineString(fromRepo, "orionctl"), "orionctl");
  assert.equal(machineString({ ...fromRepo, globalValue: " /opt/orion/bin/orionctl " }, "orionctl"), "/opt/orion/bin/orionctl");
  assert.equal(machineString({ defaultValue: "", workspaceValue: "/repo/sock" }, ""), "", "the socket: the daemon's default, not the repository's");
  assert.equal(machineString({ globalValue: "  " }, "oriond"), "oriond");
  assert.equal(machineString(undefined, "oriond"), "oriond");
});

test("package.json: the same settings are machine-scoped and restricted, and Restricted Mode is supported in part", () => {
  // The tests run from out/test; package.json is two directories up.
  const pkg = JSON.parse(fs.readFileSync(path.join(__dirname, "..", "..", "package.json"), "utf8"));
  const props = pkg.contributes.configuration.properties;
  for (const key of machineSettings) {
    assert.equal(props[`orion.${key}`]?.scope, "machine", `orion.${key}`);
  }
  const untrusted = pkg.capabilities.untrustedWorkspaces;
  assert.equal(untrusted.supported, "limited");
  assert.deepEqual([...untrusted.restrictedConfigurations].sort(), machineSettings.map((k) => `orion.${k}`).sort());
  assert.match(props["orion.socket"].markdownDescription, /\$TMPDIR\/orion-<uid>\/oriond\.sock/);
});
