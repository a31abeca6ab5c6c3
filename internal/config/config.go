// Package config binds a command's flags to a TOML config file and to
// environment variables, and prints the result with each value's source.
//
// The flags are the declarations: every long flag of the command is a key
// of the file (its name without dashes) with the flag's type. A Schema adds
// what a flag cannot say: which settings an environment variable sets,
// which hold paths, which are secrets, which defaults depend on the
// environment.
//
// Precedence, each overriding the one before: the flag's default (or the
// computed default), the config file, the environment variable, the flag
// given on the command line. Values are set on the flags themselves
// without marking them Changed, so the command reads its variables as
// usual once Apply returned.
//
// Format: TOML, top-level keys only. Strings and durations ("2s", "1h30m")
// are strings, sizes integers, lists arrays of strings. Unknown keys and
// tables are errors, so a typo does not go unnoticed. Paths may start with
// ~/; relative paths are relative to the file.
package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	toml "github.com/pelletier/go-toml/v2"
	"github.com/spf13/pflag"

	"github.com/orion-agent/orion/internal/paths"
)

// Sources of a setting's value, lowest precedence first (an environment
// variable's source is EnvSource(name)).
const (
	SourceDefault = "default"
	SourceFile    = "config file"
	SourceFlag    = "flag"
)

// EnvSource is the source of a value read from the environment variable
// name.
func EnvSource(name string) string { return "environment ($" + name + ")" }

// DefaultFunc computes a default that depends on the environment.
type DefaultFunc func(getenv func(string) string) ([]string, error)

// Schema is how the flags of one command are bound.
type Schema struct {
	// Command names the command in messages, e.g. "oriond run".
	Command string
	// PrintCommand names the command that prints the configuration, e.g.
	// "oriond config print".
	PrintCommand string
	// FileName is the config file's name in the config directory.
	FileName string
	// FileEnv is the environment variable that names the config file.
	FileEnv string
	// Env maps a setting to the environment variable that sets it. A
	// list's variable is colon-separated.
	Env map[string]string
	// Paths are settings holding paths: in the file, ~/ is the home
	// directory and a relative path is relative to the file's directory.
	Paths map[string]bool
	// EmptyListOK are list settings an empty list may set (their
	// default is nothing); any other list needs a value.
	EmptyListOK map[string]bool
	// Secrets are shown with their password masked (see MaskPassword).
	Secrets map[string]bool
	// Skip are flags that are not settings (help, the config flag).
	Skip map[string]bool
	// Defaults are the defaults that are not constants.
	Defaults map[string]DefaultFunc
}

// File is where the config file is, and whether it must exist.
type File struct {
	Path string
	// Explicit is true when the config flag or FileEnv named the file: then
	// it must exist.
	Explicit bool
	// Found is true once the file was read.
	Found bool
}

// Setting is one resolved setting.
type Setting struct {
	Key string
	// Source is where its value came from: SourceFlag, EnvSource(...),
	// SourceFile or SourceDefault.
	Source string
	// Flag holds the value.
	Flag *pflag.Flag
}

// Resolved is the effective configuration of a command.
type Resolved struct {
	File     File
	Settings []Setting
}

// Lookup returns the setting key, if there is one.
func (r *Resolved) Lookup(key string) (Setting, bool) {
	for _, s := range r.Settings {
		if s.Key == key {
			return s, true
		}
	}
	return Setting{}, false
}

// DefaultPath is the config file read when neither the flag nor FileEnv
// names one, as help shows it: the real path, from $XDG_CONFIG_HOME only
// when it is set.
func (s *Schema) DefaultPath(getenv func(string) string) string {
	dir, err := paths.DefaultConfigDir(paths.Env(getenv))
	if err != nil {
		return "$XDG_CONFIG_HOME/orion/" + s.FileName + ", else ~/.config/orion/" + s.FileName
	}
	return filepath.Join(dir, s.FileName)
}

// Locate finds the config file: the one configFlag names when it was given
// (configFlag may be nil), else the one FileEnv names, else the default.
func (s *Schema) Locate(configFlag *pflag.Flag, getenv func(string) string) (File, error) {
	if configFlag != nil && configFlag.Changed {
		p, err := filepath.Abs(configFlag.Value.String())
		return File{Path: p, Explicit: true}, err
	}
	if p := getenv(s.FileEnv); p != "" {
		p, err := filepath.Abs(p)
		return File{Path: p, Explicit: true}, err
	}
	dir, err := paths.DefaultConfigDir(paths.Env(getenv))
	if err != nil {
		return File{}, err
	}
	return File{Path: filepath.Join(dir, s.FileName)}, nil
}

// read reads and decodes the file; a missing default file is empty.
func read(cf *File) (map[string]any, error) {
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

// Apply gives every flag of fs that the command line did not set its value
// from the environment, the config file or the computed default, in that
// order, and reports where each value came from. Every error it returns is
// about how the command was invoked or configured.
func (s *Schema) Apply(fs *pflag.FlagSet, configFlag *pflag.Flag, getenv func(string) string) (*Resolved, error) {
	cf, err := s.Locate(configFlag, getenv)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	file, err := read(&cf)
	if err != nil {
		return nil, err
	}
	known := map[string]bool{}
	fs.VisitAll(func(f *pflag.Flag) {
		if !s.Skip[f.Name] {
			known[f.Name] = true
		}
	})
	if err := s.checkKeys(cf.Path, file, known); err != nil {
		return nil, err
	}
	r := &Resolved{File: cf}
	var firstErr error
	fs.VisitAll(func(f *pflag.Flag) {
		if firstErr != nil || s.Skip[f.Name] {
			return
		}
		src, err := s.resolve(f, getenv, cf, file)
		if err != nil {
			firstErr = err
			return
		}
		r.Settings = append(r.Settings, Setting{Key: f.Name, Source: src, Flag: f})
	})
	if firstErr != nil {
		return nil, firstErr
	}
	return r, nil
}

func (s *Schema) resolve(f *pflag.Flag, getenv func(string) string, cf File, file map[string]any) (string, error) {
	if f.Changed {
		return SourceFlag, nil
	}
	if env, ok := s.Env[f.Name]; ok {
		if v := getenv(env); v != "" {
			vals := []string{v}
			if IsList(f) {
				vals = SplitList(v)
			}
			if err := s.set(f, vals); err != nil {
				return "", fmt.Errorf("$%s: %w", env, err)
			}
			return EnvSource(env), nil
		}
	}
	if v, ok := file[f.Name]; ok {
		vals, err := s.fileValues(f, v, cf.Path)
		if err == nil {
			err = s.set(f, vals)
		}
		if err != nil {
			return "", fmt.Errorf("config file %s: %s: %w", cf.Path, f.Name, err)
		}
		return SourceFile, nil
	}
	if def, ok := s.Defaults[f.Name]; ok {
		vals, err := def(getenv)
		if err != nil {
			return "", err
		}
		if err := s.set(f, vals); err != nil {
			return "", fmt.Errorf("default of %s: %w", f.Name, err)
		}
	}
	return SourceDefault, nil
}

// IsList reports whether f takes several values.
func IsList(f *pflag.Flag) bool {
	t := f.Value.Type()
	return t == "stringArray" || t == "stringSlice"
}

// SplitList splits a colon-separated list, dropping empty elements.
func SplitList(s string) []string {
	var out []string
	for _, r := range strings.Split(s, ":") {
		if r = strings.TrimSpace(r); r != "" {
			out = append(out, r)
		}
	}
	return out
}

// set sets f (a list gets every value) without marking it Changed.
func (s *Schema) set(f *pflag.Flag, vals []string) error {
	if len(vals) == 0 {
		if IsList(f) && !s.EmptyListOK[f.Name] {
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
func (s *Schema) fileValues(f *pflag.Flag, v any, file string) ([]string, error) {
	typ := f.Value.Type()
	str := func(v any) (string, error) {
		str, ok := v.(string)
		if !ok {
			return "", fmt.Errorf("want a string, got %s", tomlType(v))
		}
		if s.Paths[f.Name] {
			return ExpandPath(str, filepath.Dir(file))
		}
		return str, nil
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

// ExpandPath resolves ~/ (the home directory) and paths relative to dir.
func ExpandPath(p, dir string) (string, error) {
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
func (s *Schema) checkKeys(path string, file map[string]any, known map[string]bool) error {
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
		if c := closest(k, known); c != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", c)
		}
		return fmt.Errorf("%s; the keys are the flags of `%s` without dashes: `%s` lists them", msg, s.Command, s.PrintCommand)
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
