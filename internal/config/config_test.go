package config_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/orion-agent/orion/internal/config"
)

type settings struct {
	socket string
	roots  []string
	idle   time.Duration
	dsn    string
}

func flags(s *settings) *pflag.FlagSet {
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	fs.StringVar(&s.socket, "socket", "", "socket")
	fs.StringArrayVar(&s.roots, "allow-root", nil, "roots")
	fs.DurationVar(&s.idle, "idle", 2*time.Second, "idle")
	fs.StringVar(&s.dsn, "trace-postgres", "", "dsn")
	return fs
}

var schema = &config.Schema{
	Command: "x run", PrintCommand: "x config print", FileName: "x.toml", FileEnv: "X_CONFIG",
	Env:     map[string]string{"socket": "X_SOCKET", "allow-root": "X_ROOTS", "trace-postgres": "X_PG"},
	Paths:   map[string]bool{"socket": true, "allow-root": true},
	Secrets: map[string]bool{"trace-postgres": true},
}

func write(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "x.toml")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// Each value comes from the first of flag, environment, file, default, and
// its source says which; relative paths in the file are the file's.
func TestApplyPrecedence(t *testing.T) {
	file := write(t, "socket = \"s.sock\"\nallow-root = [\"a\", \"/b\"]\nidle = \"5s\"\n")
	env := map[string]string{"X_CONFIG": file, "X_ROOTS": "/e1:/e2", "X_PG": "postgres://u:pw@h/db"}
	var s settings
	fs := flags(&s)
	if err := fs.Parse([]string{"--idle", "7s"}); err != nil {
		t.Fatal(err)
	}
	r, err := schema.Apply(fs, nil, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.socket, filepath.Join(filepath.Dir(file), "s.sock"); got != want {
		t.Errorf("socket %q, want %q", got, want)
	}
	if got, want := s.roots, []string{"/e1", "/e2"}; !slices.Equal(got, want) {
		t.Errorf("roots %q, want %q", got, want)
	}
	if s.idle != 7*time.Second {
		t.Errorf("idle %v", s.idle)
	}
	for key, want := range map[string]string{"socket": config.SourceFile, "allow-root": config.EnvSource("X_ROOTS"),
		"idle": config.SourceFlag, "trace-postgres": config.EnvSource("X_PG")} {
		if st, _ := r.Lookup(key); st.Source != want {
			t.Errorf("%s: source %q, want %q", key, st.Source, want)
		}
	}
	// Args carries what the environment and the flags set, not the file
	// (read again by whoever runs the args) and never a secret.
	args, secrets := schema.Args(r)
	if want := []string{"--allow-root=/e1", "--allow-root=/e2", "--idle=7s"}; !slices.Equal(args, want) {
		t.Errorf("Args %q, want %q", args, want)
	}
	if !slices.Equal(secrets, []string{"trace-postgres"}) {
		t.Errorf("secrets %q", secrets)
	}
	var b strings.Builder
	if err := schema.Print(&b, r); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), ":pw@") || !strings.Contains(b.String(), "# flag") {
		t.Errorf("printed:\n%s", b.String())
	}
}

func TestApplyErrors(t *testing.T) {
	for name, tc := range map[string]struct{ file, want string }{
		"UnknownKey":  {"sockt = \"x\"\n", `unknown key "sockt" (did you mean "socket"?); the keys are the flags of ` + "`x run`"},
		"Table":       {"[run]\nidle = \"1s\"\n", "[run]: the file has no tables"},
		"WrongType":   {"idle = 5\n", `idle: want a duration as a string such as "2s"`},
		"EmptyList":   {"allow-root = []\n", "allow-root: empty list; give at least one value"},
		"BadDuration": {"idle = \"soon\"\n", `idle: time: invalid duration "soon"`},
		"Syntax":      {"idle = \n", "x.toml:1:"},
	} {
		t.Run(name, func(t *testing.T) {
			env := map[string]string{"X_CONFIG": write(t, tc.file)}
			var s settings
			_, err := schema.Apply(flags(&s), nil, func(k string) string { return env[k] })
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want it to contain %q", err, tc.want)
			}
		})
	}
	// A file named explicitly must exist; the default one need not.
	env := map[string]string{"X_CONFIG": filepath.Join(t.TempDir(), "missing.toml")}
	var s settings
	if _, err := schema.Apply(flags(&s), nil, func(k string) string { return env[k] }); err == nil {
		t.Fatal("a missing explicit config file was accepted")
	}
	env = map[string]string{"XDG_CONFIG_HOME": t.TempDir()}
	r, err := schema.Apply(flags(&s), nil, func(k string) string { return env[k] })
	if err != nil || r.File.Found {
		t.Fatalf("missing default file: %v, found %v", err, r.File.Found)
	}
}

func TestMaskPassword(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://orion:s3cret@db:5432/traces?sslmode=disable": "postgres://orion:*****@db:5432/traces?sslmode=disable",
		"postgres://orion@db/traces?password=s3cret":             "postgres://orion@db/traces?password=*****",
		"postgres://orion@db/traces":                             "postgres://orion@db/traces",
		"host=db user=orion password=s3cret dbname=traces":       "host=db user=orion password=***** dbname=traces",
		"host=db password = 'sec ret' dbname=traces":             "host=db password = ***** dbname=traces",
		"": "",
	} {
		if got := config.MaskPassword(in); got != want {
			t.Errorf("%q: got %q, want %q", in, got, want)
		}
	}
}
