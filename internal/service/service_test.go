package service

import (
	"bufio"
	"bytes"
	"encoding/xml"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/orion-agent/orion/internal/paths"
)

// packaged is a unit file of packaging/: rendered for the paths it names,
// a unit must come out exactly as the package ships it, which shows that
// render changes nothing but what it must.
func packaged(name string) string { return "../../packaging/" + name }

var update = flag.Bool("update", false, "rewrite golden files")

// golden compares got with the file at path, or rewrites it with -update
// (never a packaged file: that is what render starts from).
func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update && !strings.HasPrefix(path, packaged("")) {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Fatalf("%s differs (go test -update rewrites it):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// checkUnitSyntax fails unless text is a systemd unit: sections and
// Key=Value lines, comments, blanks.
func checkUnitSyntax(t *testing.T, text string) map[string]map[string][]string {
	t.Helper()
	units := map[string]map[string][]string{}
	section := ""
	sc := bufio.NewScanner(strings.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = line[1 : len(line)-1]
			if section != "Unit" && section != "Service" && section != "Install" {
				t.Fatalf("line %d: unknown section %q", n, section)
			}
			units[section] = map[string][]string{}
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || section == "" || !regexp.MustCompile(`^[A-Z][A-Za-z]+$`).MatchString(k) {
				t.Fatalf("line %d is not Key=Value in a section: %q", n, line)
			}
			units[section][k] = append(units[section][k], v)
		}
	}
	return units
}

func TestSystemdUnits(t *testing.T) {
	tests := []struct {
		name   string
		spec   Spec
		golden string
		check  func(t *testing.T, u map[string]map[string][]string)
	}{
		{"User", Spec{Exec: []string{"/usr/bin/oriond", "run"}},
			// The packaged unit is exactly what install writes for
			// /usr/bin/oriond.
			packaged("systemd/oriond.service"),
			func(t *testing.T, u map[string]map[string][]string) {
				if got := u["Install"]["WantedBy"]; len(got) != 1 || got[0] != "default.target" {
					t.Fatalf("WantedBy=%v: a user manager has only default.target", got)
				}
				if _, ok := u["Service"]["User"]; ok {
					t.Fatal("a user unit with User=")
				}
			}},
		{"System", Spec{Exec: []string{"/usr/bin/oriond", "run", "--socket", SystemSocket}, System: true, RunAs: "alice"},
			"testdata/oriond.system.service",
			func(t *testing.T, u map[string]map[string][]string) {
				if got := u["Install"]["WantedBy"]; len(got) != 1 || got[0] != "multi-user.target" {
					t.Fatalf("WantedBy=%v", got)
				}
				if got := u["Service"]["User"]; len(got) != 1 || got[0] != "alice" {
					t.Fatalf("User=%v", got)
				}
				if got := u["Service"]["RuntimeDirectory"]; len(got) != 1 || got[0] != "oriond" {
					t.Fatalf("RuntimeDirectory=%v", got)
				}
			}},
		{"Quoting", Spec{Exec: []string{"/opt/my apps/oriond", "run", "--allow-root", `/srv/a "b"\c`, "--state-dir", "/x/100%/$HOME"}},
			"testdata/oriond.quoted.service",
			func(t *testing.T, u map[string]map[string][]string) {
				want := `"/opt/my apps/oriond" run --allow-root "/srv/a \"b\"\\c" --state-dir /x/100%%/$$HOME`
				if got := u["Service"]["ExecStart"]; len(got) != 1 || got[0] != want {
					t.Fatalf("ExecStart=%v\nwant       %s", got, want)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text, err := Render(Systemd, tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			u := checkUnitSyntax(t, text)
			for _, k := range []string{"ExecStart", "Restart", "Type"} {
				if len(u["Service"][k]) != 1 {
					t.Fatalf("%s=%v", k, u["Service"][k])
				}
			}
			if u["Service"]["Restart"][0] != "on-failure" {
				t.Fatalf("Restart=%s", u["Service"]["Restart"][0])
			}
			tt.check(t, u)
			golden(t, tt.golden, text)
			verifyUnit(t, tt.spec)
		})
	}
}

// verifyUnit has systemd itself check the unit for spec, where
// systemd-analyze is installed (it works without systemd running). The
// executable is replaced by a real one under a directory with a space in
// its name, so systemd also checks our quoting.
func verifyUnit(t *testing.T, spec Spec) {
	t.Helper()
	sa, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Log("no systemd-analyze; the unit is checked by syntax only")
		return
	}
	dir := t.TempDir()
	exe, _ := os.Executable()
	bin := filepath.Join(dir, "my apps", "oriond")
	os.Mkdir(filepath.Dir(bin), 0o755)
	if err := os.Symlink(exe, bin); err != nil {
		t.Fatal(err)
	}
	spec.Exec = append([]string{bin}, spec.Exec[1:]...)
	if spec.System {
		spec.RunAs = "root"
	}
	text, err := Render(Systemd, spec)
	if err != nil {
		t.Fatal(err)
	}
	verifyUnitText(t, sa, dir, "oriond.service", text, spec.System)
}

// verifyUnitText has systemd-analyze (at sa) check a unit's text, written
// as name in dir.
func verifyUnitText(t *testing.T, sa, dir, name, text string, system bool) {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"verify", "--man=no"}
	if !system {
		args = append(args, "--user")
	}
	cmd := exec.Command(sa, append(args, path)...)
	// systemd-analyze loads the user manager's other units, whose sockets
	// (gpg-agent's) live in the runtime directory: it needs a name short
	// enough for a socket, which t.TempDir() in a long TMPDIR is not.
	runtimeDir, err := paths.SocketTempDir("sa", "gnupg/S.gpg-agent.browser")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(runtimeDir)
	cmd.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+runtimeDir)
	out, err := cmd.CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Fatalf("systemd-analyze %s: %v\n%s\n%s", strings.Join(args, " "), err, out, text)
	}
}

func TestUnitRefusals(t *testing.T) {
	for _, args := range [][]string{{"/usr/bin/oriond", "run\n[Service]"}, {"/usr/bin/oriond", "{{Path}}"}} {
		if _, err := Render(Systemd, Spec{Exec: args}); err == nil {
			t.Fatalf("rendered a unit for %q", args)
		}
	}
}

func TestLaunchdPlists(t *testing.T) {
	tests := []struct {
		name   string
		spec   Spec
		golden string
	}{
		{"Agent", Spec{Exec: []string{"/usr/local/bin/oriond", "run"}, Home: "/Users/YOU"},
			packaged("launchd/" + LaunchdLabel + ".plist")},
		{"Daemon", Spec{Exec: []string{"/usr/local/bin/oriond", "run", "--socket", "/tmp/oriond-alice/oriond.sock", "--allow-root", "/a&b<c>"}, System: true, RunAs: "alice"},
			"testdata/" + LaunchdLabel + ".system.plist"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text, err := Render(Launchd, tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			// Well-formed, and the program arguments come back intact.
			var plist struct {
				Dict struct {
					Inner []byte `xml:",innerxml"`
				} `xml:"dict"`
			}
			if err := xml.Unmarshal([]byte(text), &plist); err != nil {
				t.Fatalf("not XML: %v", err)
			}
			var args []string
			dec := xml.NewDecoder(strings.NewReader(text))
			inArray := false
			for {
				tok, err := dec.Token()
				if err != nil {
					break
				}
				switch tok := tok.(type) {
				case xml.StartElement:
					if tok.Name.Local == "array" {
						inArray = true
					} else if inArray && tok.Name.Local == "string" {
						var s string
						dec.DecodeElement(&s, &tok)
						args = append(args, s)
					}
				case xml.EndElement:
					if tok.Name.Local == "array" {
						inArray = false
					}
				}
			}
			if strings.Join(args, "\x00") != strings.Join(tt.spec.Exec, "\x00") {
				t.Fatalf("ProgramArguments %q, want %q", args, tt.spec.Exec)
			}
			golden(t, tt.golden, text)
		})
	}
}

// The packaged proxy unit is exactly what install --with-proxy writes for
// /usr/bin/orionctl, and systemd accepts it.
func TestProxyUnit(t *testing.T) {
	text, err := RenderProxy("/usr/bin/orionctl")
	if err != nil {
		t.Fatal(err)
	}
	u := checkUnitSyntax(t, text)
	if got, want := u["Service"]["ExecStart"], "/usr/bin/orionctl proxy --listen 127.0.0.1:8788"; len(got) != 1 || got[0] != want {
		t.Fatalf("ExecStart=%v, want %s", got, want)
	}
	if got := u["Install"]["WantedBy"]; len(got) != 1 || got[0] != "default.target" {
		t.Fatalf("WantedBy=%v: a user manager has only default.target", got)
	}
	if got := u["Unit"]["After"]; len(got) != 1 || got[0] != "oriond.service" {
		t.Fatalf("After=%v", got)
	}
	golden(t, packaged("systemd/orionctl-proxy.service"), text)

	// The path is quoted like oriond's, a % in it doubled for systemd.
	quoted, err := RenderProxy("/opt/my apps/100%/orionctl")
	if err != nil {
		t.Fatal(err)
	}
	if want := `ExecStart="/opt/my apps/100%%/orionctl" proxy --listen 127.0.0.1:8788` + "\n"; !strings.Contains(quoted, want) {
		t.Fatalf("want %q in\n%s", want, quoted)
	}
	if _, err := RenderProxy("/usr/bin/orion\nctl"); err == nil {
		t.Fatal("rendered a unit for a path with a newline")
	}

	sa, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Log("no systemd-analyze; the unit is checked by syntax only")
		return
	}
	dir := t.TempDir()
	exe, _ := os.Executable()
	bin := filepath.Join(dir, "my apps", "orionctl")
	os.Mkdir(filepath.Dir(bin), 0o755)
	if err := os.Symlink(exe, bin); err != nil {
		t.Fatal(err)
	}
	text, err = RenderProxy(bin)
	if err != nil {
		t.Fatal(err)
	}
	verifyUnitText(t, sa, dir, "orionctl-proxy.service", text, false)
}

func TestFindOrionctl(t *testing.T) {
	env := func(bindir string, onPath string) Env {
		return Env{
			Executable: func() (string, error) { return filepath.Join(bindir, "oriond"), nil },
			LookPath: func(string) (string, error) {
				if onPath == "" {
					return "", exec.ErrNotFound
				}
				return onPath, nil
			},
		}
	}
	t.Run("NextToOriond", func(t *testing.T) {
		bindir := t.TempDir()
		os.WriteFile(filepath.Join(bindir, "orionctl"), []byte("#!/bin/sh\n"), 0o755)
		if got, err := env(bindir, "/usr/bin/orionctl").FindOrionctl(); err != nil || got != filepath.Join(bindir, "orionctl") {
			t.Fatalf("got %q, %v; want the one next to oriond", got, err)
		}
	})
	t.Run("OnPath", func(t *testing.T) {
		bindir := t.TempDir()
		// Not executable: not a program to run.
		os.WriteFile(filepath.Join(bindir, "orionctl"), nil, 0o644)
		if got, err := env(bindir, "/usr/local/bin/orionctl").FindOrionctl(); err != nil || got != "/usr/local/bin/orionctl" {
			t.Fatalf("got %q, %v", got, err)
		}
	})
	t.Run("Absent", func(t *testing.T) {
		bindir := t.TempDir()
		_, err := env(bindir, "").FindOrionctl()
		if err == nil || !strings.Contains(err.Error(), "orionctl is neither next to oriond (in "+bindir+") nor on PATH") {
			t.Fatalf("err %v", err)
		}
	})
}

// A packaged file that lost a line render needs fails rendering with a
// message naming the file, instead of writing a unit without it.
func TestPackagedFileLosesALine(t *testing.T) {
	text := "[Service]\nType=simple\n"
	if _, err := replaceLine(text, "systemd/x.service", "ExecStart=", "ExecStart=/x\n"); err == nil ||
		!strings.Contains(err.Error(), "packaging/systemd/x.service has 0 ExecStart= lines") {
		t.Fatalf("err %v", err)
	}
	if _, err := replaceOnce(text+text, "systemd/x.service", "Type=simple", "Type=exec"); err == nil ||
		!strings.Contains(err.Error(), "2 copies") {
		t.Fatalf("err %v", err)
	}
}
