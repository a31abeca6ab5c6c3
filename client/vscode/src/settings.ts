// The settings that name a program to run or a socket to trust are the
// person's, never a workspace's: a cloned repository's
// .vscode/settings.json could otherwise point orion.orionctlPath at a file
// of its own, which Show Trace would run. package.json gives them the
// machine scope (VS Code then ignores them in workspace settings); this
// reader holds to the same rule whatever the editor does with scopes.
// Nothing here imports vscode, so it is tested with node --test.

/** The part of WorkspaceConfiguration.inspect()'s answer read here. */
export interface Inspected<T> {
  defaultValue?: T;
  globalValue?: T;
  workspaceValue?: T;
  workspaceFolderValue?: T;
}

/** The settings read only from the person's user settings. */
export const machineSettings = ["socket", "oriondPath", "orionctlPath"] as const;

export type MachineSetting = (typeof machineSettings)[number];

/**
 * machineString is a setting as the user settings give it, else its
 * default, trimmed; empty or unset, fallback. A workspace's or a
 * folder's value is never read.
 */
export function machineString(i: Inspected<string> | undefined, fallback: string): string {
  for (const v of [i?.globalValue, i?.defaultValue]) {
    if (typeof v === "string" && v.trim() !== "") return v.trim();
  }
  return fallback;
}
