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
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	toml "github.com/pelletier/go-toml/v2"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/orion-agent/orion/internal/paths"
	"github.com/orion-agent/orion/internal/trace"
	"github.com/orion-agent/orion/internal/trace/tracepg"
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

// Sources of a setting's value, lowest precedence first.
const (
	sourceDefault = "default"
	sourceFile    = "config file"
	sourceFlag    = "flag"
)

// configFile is where the config file is, and whether it must exist.
type configFile struct {
	Path string
	// Explicit is true when --config or ORION_CONFIG named the file.
	Explicit bool
	// Found is true once the file was read.
	Found bool
}

// addConfigFlag defines --config on the root command, for every
// subcommand.
func addConfigFlag(root *cobra.Command, getenv func(string) string) {
	root.PersistentFlags().String("config", "", "config file (default "+defaultConfigPath(getenv)+") [ORION_CONFIG]")
}

// defaultConfigPath is the config file read when neither --config nor
// $ORION_CONFIG names one, as help shows it: the real path, from
// $XDG_CONFIG_HOME only when it is set.
func defaultConfigPath(getenv func(string) string) string {
	dir, err := paths.DefaultConfigDir(paths.Env(getenv))
	if err != nil {
		return "$XDG_CONFIG_HOME/orion/" + ConfigFileName + ", else ~/.config/orion/" + ConfigFileName
	}
	return filepath.Join(dir, ConfigFileName)
}

// locateConfig finds the config file for cmd.
func locateConfig(cmd *cobra.Command, getenv func(string) string) (configFile, error) {
	if f := cmd.Flag("config"); f != nil && f.Changed {
		p, err := filepath.Abs(f.Value.String())
		return configFile{Path: p, Explicit: true}, err
	}
	if p := getenv("ORION_CONFIG"); p != "" {
		p, err := filepath.Abs(p)
		return configFile{Path: p, Explicit: true}, err
	}
	dir, err := paths.DefaultConfigDir(paths.Env(getenv))
	if err != nil {
		return configFile{}, err
	}
	return configFile{Path: filepath.Join(dir, ConfigFileName)}, nil
}

// readConfig reads and decodes the file; a missing default file is empty.
func readConfig(cf *configFile) (map[string]any, error) {
	b, err := os.ReadFile(cf.Path)
	if errors.Is(err, os.ErrNotExist) && !cf.Explicit {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the config file: %w", err)
	}
	cf.Found = true
	var m map[string]any
	if err := toml.Unmarshal(b, &m); err != nil {
		var de *toml.DecodeError
		if errors.As(err, &de) {
			row, col := de.Position()
			return nil, fmt.Errorf("config file %s:%d:%d: %v", cf.Path, row, col, de)
		}
		return nil, fmt.Errorf("config file %s: %w", cf.Path, err)
	}
	return m, nil
}

// setting is one resolved setting, for config print.
type setting struct {
	Key    string
	Source string
	flag   *pflag.Flag
}

// resolved is the effective configuration of oriond run.
type resolved struct {
	File     configFile
	Settings []setting
}

// defaultFunc computes a default that depends on the environment.
type defaultFunc func(getenv func(string) string) ([]string, error)

// computedDefaults are the defaults that are not constants.
var computedDefaults = map[string]defaultFunc{
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

// applyConfig gives every flag of cmd that the command line did not set
// its value from the environment, the config file or the computed default,
// in that order, and reports where each value came from. Flags set this
// way are not marked Changed.
func applyConfig(cmd *cobra.Command, getenv func(string) string) (*resolved, error) {
	cf, err := locateConfig(cmd, getenv)
	if err != nil {
		return nil, usageError{fmt.Errorf("config: %w", err)}
	}
	file, err := readConfig(&cf)
	if err != nil {
		return nil, usageError{err}
	}
	fs := cmd.Flags()
	known := map[string]bool{}
	fs.VisitAll(func(f *pflag.Flag) {
		if !notSettings[f.Name] {
			known[f.Name] = true
		}
	})
	if err := checkKeys(cf.Path, file, known); err != nil {
		return nil, usageError{err}
	}
	r := &resolved{File: cf}
	var firstErr error
	fs.VisitAll(func(f *pflag.Flag) {
		if firstErr != nil || notSettings[f.Name] {
			return
		}
		src, err := resolveFlag(f, getenv, cf, file)
		if err != nil {
			firstErr = usageError{err}
			return
		}
		r.Settings = append(r.Settings, setting{Key: f.Name, Source: src, flag: f})
	})
	if firstErr != nil {
		return nil, firstErr
	}
	return r, nil
}

func resolveFlag(f *pflag.Flag, getenv func(string) string, cf configFile, file map[string]any) (string, error) {
	if f.Changed {
		return sourceFlag, nil
	}
	if env, ok := envKeys[f.Name]; ok {
		if v := getenv(env); v != "" {
			vals := []string{v}
			if isList(f) {
				vals = splitList(v)
			}
			if err := setValues(f, vals); err != nil {
				return "", fmt.Errorf("$%s: %w", env, err)
			}
			return "environment ($" + env + ")", nil
		}
	}
	if v, ok := file[f.Name]; ok {
		vals, err := fileValues(f, v, cf.Path)
		if err == nil {
			err = setValues(f, vals)
		}
		if err != nil {
			return "", fmt.Errorf("config file %s: %s: %w", cf.Path, f.Name, err)
		}
		return sourceFile, nil
	}
	if def, ok := computedDefaults[f.Name]; ok {
		vals, err := def(getenv)
		if err != nil {
			return "", err
		}
		if err := setValues(f, vals); err != nil {
			return "", fmt.Errorf("default of %s: %w", f.Name, err)
		}
	}
	return sourceDefault, nil
}

func isList(f *pflag.Flag) bool {
	t := f.Value.Type()
	return t == "stringArray" || t == "stringSlice"
}

func splitList(s string) []string {
	var out []string
	for _, r := range strings.Split(s, ":") {
		if r = strings.TrimSpace(r); r != "" {
			out = append(out, r)
		}
	}
	return out
}

// setValues sets f (a list gets every value) without marking it Changed.
func setValues(f *pflag.Flag, vals []string) error {
	if len(vals) == 0 {
		if isList(f) && !emptyListOK[f.Name] {
			return errors.New("empty list; give at least one value")
		}
		return nil
	}
	for _, v := range vals {
		if err := f.Value.Set(v); err != nil {
			return err
		}
	}
	return nil
}

// fileValues converts a TOML value to the strings f.Value.Set takes,
// checking its type against the flag's.
func fileValues(f *pflag.Flag, v any, file string) ([]string, error) {
	typ := f.Value.Type()
	str := func(v any) (string, error) {
		s, ok := v.(string)
		if !ok {
			return "", fmt.Errorf("want a string, got %s", tomlType(v))
		}
		if pathKeys[f.Name] {
			return expandPath(s, filepath.Dir(file))
		}
		return s, nil
	}
	switch typ {
	case "string":
		s, err := str(v)
		return []string{s}, err
	case "duration":
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf(`want a duration as a string such as "2s" or "1h30m", got %s`, tomlType(v))
		}
		return []string{s}, nil
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		n, ok := v.(int64)
		if !ok {
			return nil, fmt.Errorf("want an integer, got %s", tomlType(v))
		}
		return []string{strconv.FormatInt(n, 10)}, nil
	case "float32", "float64":
		switch n := v.(type) {
		case int64:
			return []string{strconv.FormatInt(n, 10)}, nil
		case float64:
			return []string{strconv.FormatFloat(n, 'g', -1, 64)}, nil
		}
		return nil, fmt.Errorf("want a number, got %s", tomlType(v))
	case "bool":
		b, ok := v.(bool)
		if !ok {
			return nil, fmt.Errorf("want true or false, got %s", tomlType(v))
		}
		return []string{strconv.FormatBool(b)}, nil
	case "stringArray", "stringSlice":
		items, ok := v.([]any)
		if !ok {
			if s, isStr := v.(string); isStr {
				items = []any{s}
			} else {
				return nil, fmt.Errorf("want an array of strings, got %s", tomlType(v))
			}
		}
		var out []string
		for _, it := range items {
			s, err := str(it)
			if err != nil {
				return nil, fmt.Errorf("an element: %w", err)
			}
			out = append(out, s)
		}
		return out, nil
	}
	return nil, fmt.Errorf("settings of type %s cannot be set in the config file; use the flag", typ)
}

func tomlType(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case int64:
		return "an integer"
	case float64:
		return "a float"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	case map[string]any:
		return "a table"
	}
	return fmt.Sprintf("%T", v)
}

// expandPath resolves ~/ and paths relative to dir.
func expandPath(p, dir string) (string, error) {
	if p == "~" || strings.HasPrefix(p, "~/") {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("expanding %q: %w", p, err)
		}
		return filepath.Join(home, strings.TrimPrefix(p, "~")), nil
	}
	if p == "" || filepath.IsAbs(p) {
		return p, nil
	}
	return filepath.Join(dir, p), nil
}

// checkKeys refuses keys that are not settings, and tables.
func checkKeys(path string, file map[string]any, known map[string]bool) error {
	keys := make([]string, 0, len(file))
	for k := range file {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if _, isTable := file[k].(map[string]any); isTable && !known[k] {
			return fmt.Errorf("config file %s: [%s]: the file has no tables; write key = value lines at the top", path, k)
		}
		if known[k] {
			continue
		}
		msg := fmt.Sprintf("config file %s: unknown key %q", path, k)
		if s := closest(k, known); s != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", s)
		}
		return errors.New(msg + "; the keys are the flags of `oriond run` without dashes: `oriond config print` lists them")
	}
	return nil
}

// closest is the known key nearest to k by edit distance, if near.
func closest(k string, known map[string]bool) string {
	best, bestD := "", 3
	for c := range known {
		if d := editDistance(k, c); d < bestD || (d == bestD && c < best) {
			best, bestD = c, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// newConfigCmd is `oriond config`.
func newConfigCmd(getenv func(string) string) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Show oriond's configuration",
		Long: `The config file is TOML. Its keys are the long flags of "oriond run" without
their dashes; strings, durations ("2s", "1h30m") and paths are strings, sizes
integers, allow-root an array of strings. Unknown keys are an error.

It is --config PATH, else $ORION_CONFIG, else
$XDG_CONFIG_HOME/orion/oriond.toml, else ~/.config/orion/oriond.toml
(here: ` + defaultConfigPath(getenv) + `). A missing
default file means defaults; ORION_CONFIG=/dev/null reads no file.

Each setting takes the first of: its flag, its environment variable
(ORION_SOCKET, ORION_STATE_DIR, ORION_ALLOW_ROOTS colon-separated,
ORION_TRACE_POSTGRES, ORION_STORE_MAX_BYTES), the config file, the built-in
default.`,
	}
	cmd.AddCommand(newConfigPrintCmd(getenv))
	return cmd
}

func newConfigPrintCmd(getenv func(string) string) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "print [run flags]",
		Short: "Print the effective configuration of oriond run, as a config file",
		Long: `Print the configuration "oriond run" would use, given the same flags and
environment, as a config file: each setting with the place its value came
from. Redirect it to start a config file of your own. A password in
trace-postgres is masked.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			r, err := applyConfig(cmd, getenv)
			if err != nil {
				return err
			}
			if err := printConfig(cmd.OutOrStdout(), r); err != nil {
				return err
			}
			return printProtected(cmd, r, getenv)
		},
	}
	// The same flags as run, bound to a run command that never runs.
	cmd.Flags().SortFlags = false
	cmd.Flags().AddFlagSet(newRunCmd(getenv).Flags())
	return cmd
}

// exactArgs is cobra.ExactArgs with a usage error, for exit code 2.
func exactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := cobra.ExactArgs(n)(cmd, args); err != nil {
			return usageError{err}
		}
		return nil
	}
}

// printConfig writes r as TOML with each setting's source as a comment.
func printConfig(w io.Writer, r *resolved) error {
	var b bytes.Buffer
	b.WriteString("# Effective configuration of `oriond run` (oriond config print).\n")
	switch {
	case r.File.Found:
		fmt.Fprintf(&b, "# Config file: %s\n", r.File.Path)
	default:
		fmt.Fprintf(&b, "# Config file: %s (not found; none read)\n", r.File.Path)
	}
	b.WriteString("# Precedence: flag > environment > config file > default.\n\n")
	width := 0
	lines := make([]string, len(r.Settings))
	for i, s := range r.Settings {
		lines[i] = s.Key + " = " + tomlValue(s)
		width = max(width, utf8.RuneCountInString(lines[i]))
	}
	for i, s := range r.Settings {
		if u := s.flag.Usage; u != "" {
			fmt.Fprintf(&b, "# %s\n", firstLine(u))
		}
		pad := strings.Repeat(" ", width-utf8.RuneCountInString(lines[i]))
		fmt.Fprintf(&b, "%s%s  # %s\n", lines[i], pad, s.Source)
	}
	_, err := w.Write(b.Bytes())
	return err
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// tomlValue renders a flag's current value as a TOML value.
func tomlValue(s setting) string {
	f := s.flag
	switch f.Value.Type() {
	case "stringArray", "stringSlice":
		sv, ok := f.Value.(pflag.SliceValue)
		if !ok {
			return tomlString(f.Value.String())
		}
		items := make([]string, 0)
		for _, it := range sv.GetSlice() {
			items = append(items, tomlString(it))
		}
		return "[" + strings.Join(items, ", ") + "]"
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64", "float32", "float64", "bool":
		return f.Value.String()
	}
	v := f.Value.String()
	if secretKeys[f.Name] {
		v = maskPassword(v)
	}
	return tomlString(v)
}

// tomlString quotes s as a TOML basic string.
func tomlString(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

var kvPassword = regexp.MustCompile(`(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)`)

// maskPassword hides the password of a PostgreSQL connection string, URL
// or key=value form.
func maskPassword(dsn string) string {
	if u, err := url.Parse(dsn); err == nil && u.Scheme != "" && u.User != nil {
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
			return strings.Replace(u.String(), "xxxxx", "*****", 1)
		}
		if q := u.Query(); q.Has("password") {
			q.Set("password", "xxxxx")
			u.RawQuery = q.Encode()
			return strings.Replace(u.String(), "xxxxx", "*****", 1)
		}
		return dsn
	}
	return kvPassword.ReplaceAllString(dsn, "${1}*****")
}

// traceSettings are the flags of oriond run that configure tracing.
type traceSettings struct {
	Enabled       bool
	Retention     time.Duration
	MaxString     int
	MaxBytes      int64
	Postgres      string
	PostgresTable string
}

func addTraceFlags(f *pflag.FlagSet, t *traceSettings) {
	f.BoolVar(&t.Enabled, "trace", true, "record trace events (requests, stage changes, writes, errors) in the store; orionctl trace reads them")
	f.DurationVar(&t.Retention, "trace-retention", trace.DefaultRetention, "how long trace events are kept")
	f.IntVar(&t.MaxString, "trace-max-string", trace.DefaultMaxString, "longest string kept in a trace event, in bytes; longer ones are cut on a character boundary and marked")
	f.Int64Var(&t.MaxBytes, "trace-max-bytes", trace.DefaultMaxBytes, "cap on the stored trace events, in bytes (0: no cap); over it the oldest are deleted first")
	f.StringVar(&t.Postgres, "trace-postgres", "", "also insert trace events into this PostgreSQL database (a postgres:// URL or key=value DSN) [ORION_TRACE_POSTGRES]")
	f.StringVar(&t.PostgresTable, "trace-postgres-table", tracepg.DefaultTable, "the table, created if missing, trace events go to in PostgreSQL")
}

// minTraceMaxBytes is the smallest --trace-max-bytes: a few hundred events,
// so that a cap set too low still keeps the last moments of a session.
const minTraceMaxBytes = 64 << 10

// newTracer builds the daemon's trace recorder, or nil when tracing is off.
func newTracer(t traceSettings, log *slog.Logger) (*trace.Tracer, error) {
	if !t.Enabled {
		return nil, nil
	}
	if t.Retention < 0 {
		return nil, fmt.Errorf("--trace-retention %s: give a positive period", t.Retention)
	}
	if t.MaxString < 64 {
		return nil, fmt.Errorf("--trace-max-string %d: give at least 64 bytes", t.MaxString)
	}
	maxBytes := t.MaxBytes
	switch {
	case maxBytes == 0:
		maxBytes = -1 // trace.Options: negative is no cap, zero the default
	case maxBytes < minTraceMaxBytes:
		return nil, fmt.Errorf("--trace-max-bytes %d: give at least %d bytes, or 0 for no cap", t.MaxBytes, minTraceMaxBytes)
	}
	var sinks []trace.Sink
	if t.Postgres != "" {
		pg, err := tracepg.New(tracepg.Options{DSN: t.Postgres, Table: t.PostgresTable, Logger: log})
		if err != nil {
			return nil, err
		}
		sinks = append(sinks, pg)
	}
	return trace.New(trace.Options{
		Retention: t.Retention,
		MaxBytes:  maxBytes,
		Limits:    trace.Limits{MaxString: t.MaxString},
		Sinks:     sinks,
		Logger:    log,
	}), nil
}
