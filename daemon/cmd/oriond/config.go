package main

// The config file of oriond run.
//
// Where: --config PATH, else $ORION_CONFIG, else
// $XDG_CONFIG_HOME/orion/oriond.toml, else ~/.config/orion/oriond.toml. A
// missing default file is fine (the defaults apply); a file named by
// --config or ORION_CONFIG must exist. ORION_CONFIG=/dev/null reads none.
//
// Format: TOML, top-level keys only. Every key is a long flag of oriond run
// without its dashes, with the flag's type: strings and durations ("2s",
// "1h30m") as strings, sizes as integers, allow-root as an array of
// strings. Unknown keys are an error, so a typo does not go unnoticed.
// Paths may start with ~/; relative paths are relative to the file.
//
// Precedence, each overriding the one before: the built-in default, the
// config file, the environment variable (only some settings have one: see
// envKeys), the flag. The environment beats the file because clients find
// the daemon through the environment (ORION_SOCKET) and never read the file:
// a variable exported for both keeps them agreeing.

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/orion-agent/orion/internal/config"
	"github.com/orion-agent/orion/internal/paths"
)

// ConfigFileName is the config file's name in the config directory.
const ConfigFileName = "oriond.toml"

// envKeys are the settings an environment variable sets.
var envKeys = map[string]string{
	"socket":          "ORION_SOCKET",
	"state-dir":       "ORION_STATE_DIR",
	"allow-root":      "ORION_ALLOW_ROOTS", // colon-separated
	"trace-postgres":  "ORION_TRACE_POSTGRES",
	"store-max-bytes": "ORION_STORE_MAX_BYTES",
}

// pathKeys hold paths: in the config file ~/ is the home directory and a
// relative path is relative to the file's directory.
var pathKeys = map[string]bool{"socket": true, "state-dir": true, "allow-root": true, "spool-dir": true}

// emptyListOK are list settings whose empty list is their default, as
// `oriond config print` writes it: nothing lifted.
var emptyListOK = map[string]bool{"allow-protected": true}

// secretKeys are shown with their password masked.
var secretKeys = map[string]bool{"trace-postgres": true}

// notSettings are flags that are not settings of the daemon.
var notSettings = map[string]bool{"help": true, "config": true}

// computedDefaults are the defaults that are not constants.
var computedDefaults = map[string]config.DefaultFunc{
	"socket": func(getenv func(string) string) ([]string, error) {
		return []string{paths.DefaultSocket(withoutEnv(getenv, "ORION_SOCKET"))}, nil
	},
	"state-dir": func(getenv func(string) string) ([]string, error) {
		dir, err := paths.DefaultStateDir(withoutEnv(getenv, "ORION_STATE_DIR"))
		return []string{dir}, err
	},
	"allow-root": func(getenv func(string) string) ([]string, error) {
		home, err := paths.HomeDir(paths.Env(getenv))
		if err != nil {
			return nil, fmt.Errorf("allow-root: no root given and no home directory: %w", err)
		}
		return []string{home}, nil
	},
}

func withoutEnv(getenv func(string) string, hidden string) paths.Env {
	return func(k string) string {
		if k == hidden {
			return ""
		}
		return getenv(k)
	}
}

// schema binds the flags of oriond run (declared in run.go) to the config
// file and the environment.
var schema = &config.Schema{
	Command:      "oriond run",
	PrintCommand: "oriond config print",
	FileName:     ConfigFileName,
	FileEnv:      "ORION_CONFIG",
	Env:          envKeys,
	Paths:        pathKeys,
	EmptyListOK:  emptyListOK,
	Secrets:      secretKeys,
	Skip:         notSettings,
	Defaults:     computedDefaults,
}

// applyConfig gives every flag of cmd that the command line did not set
// its value from the environment, the config file or the computed default
// (see package config).
func applyConfig(cmd *cobra.Command, getenv func(string) string) (*config.Resolved, error) {
	r, err := schema.Apply(cmd.Flags(), cmd.Flag("config"), getenv)
	if err != nil {
		return nil, usageError{err}
	}
	return r, nil
}

// defaultConfigPath is the config file read when neither --config nor
// $ORION_CONFIG names one, as help shows it.
func defaultConfigPath(getenv func(string) string) string {
	return schema.DefaultPath(getenv)
}

// expandPath resolves ~/ and paths relative to dir.
func expandPath(p, dir string) (string, error) { return config.ExpandPath(p, dir) }
