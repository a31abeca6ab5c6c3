package config

import (
	"bytes"
	"fmt"
	"io"
	"net/url"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/spf13/pflag"
)

// Print writes r as a config file: TOML, each setting after its flag's
// usage and with its source as a comment, secrets masked.
func (s *Schema) Print(w io.Writer, r *Resolved) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Effective configuration of `%s` (%s).\n", s.Command, s.PrintCommand)
	switch {
	case r.File.Found:
		fmt.Fprintf(&b, "# Config file: %s\n", r.File.Path)
	default:
		fmt.Fprintf(&b, "# Config file: %s (not found; none read)\n", r.File.Path)
	}
	b.WriteString("# Precedence: flag > environment > config file > default.\n\n")
	width := 0
	lines := make([]string, len(r.Settings))
	for i, st := range r.Settings {
		lines[i] = st.Key + " = " + s.tomlValue(st.Flag)
		width = max(width, utf8.RuneCountInString(lines[i]))
	}
	for i, st := range r.Settings {
		if u := st.Flag.Usage; u != "" {
			fmt.Fprintf(&b, "# %s\n", firstLine(u))
		}
		pad := strings.Repeat(" ", width-utf8.RuneCountInString(lines[i]))
		fmt.Fprintf(&b, "%s%s  # %s\n", lines[i], pad, st.Source)
	}
	_, err := w.Write(b.Bytes())
	return err
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// Args is the command line that sets, by flags, every setting r took from
// a flag or from the environment: what another process of the same
// command (one a service manager starts, without this shell's
// environment) needs to run with the same configuration. Settings from
// the config file are left out (that process reads the file itself), and
// so are defaults. Secrets are left out too, since a command line is
// visible to every user of the machine and a unit file is often readable:
// their keys are returned in secrets.
func (s *Schema) Args(r *Resolved) (args, secrets []string) {
	var out []string
	for _, st := range r.Settings {
		if st.Source == SourceDefault || st.Source == SourceFile {
			continue
		}
		if s.Secrets[st.Key] {
			secrets = append(secrets, st.Key)
			continue
		}
		if IsList(st.Flag) {
			sv, ok := st.Flag.Value.(pflag.SliceValue)
			if ok {
				for _, v := range sv.GetSlice() {
					out = append(out, "--"+st.Key+"="+v)
				}
				continue
			}
		}
		out = append(out, "--"+st.Key+"="+st.Flag.Value.String())
	}
	return out, secrets
}

// tomlValue renders a flag's current value as a TOML value.
func (s *Schema) tomlValue(f *pflag.Flag) string {
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
	if s.Secrets[f.Name] {
		v = MaskPassword(v)
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

// MaskPassword hides the password of a PostgreSQL connection string, URL
// or key=value form.
func MaskPassword(dsn string) string {
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
