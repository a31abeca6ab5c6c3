package pathguard_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/orion-agent/orion/internal/pathguard"
)

// tree builds, under a resolved temporary directory base:
//
//	a/                 allowed root
//	  file.txt
//	  sub/inner/
//	  fifo
//	  out_file  -> ../outside/secret.txt
//	  out_dir   -> ../outside
//	  out_abs   -> <base>/outside/secret.txt
//	  in_dir    -> sub
//	  in_file   -> file.txt
//	  deep      -> sub/inner
//	  to_b      -> ../b
//	  dangle_out -> ../outside/new.txt   (does not exist)
//	  dangle_in  -> sub/new.txt          (does not exist)
//	  dangle_chain -> dangle_out
//	  loop1 -> loop2, loop2 -> loop1
//	ab/x.txt           sibling whose name has root a as a prefix
//	b/                 allowed root
//	outside/secret.txt
//	ws_link -> a       a workspace reached through a link outside the roots
func tree(t *testing.T) string {
	t.Helper()
	// t.TempDir may sit under a symlink (/tmp -> /private/tmp on macOS);
	// the guard returns real paths, so the expectations use them too.
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"a/sub/inner", "ab", "b", "outside"} {
		if err := os.MkdirAll(filepath.Join(base, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"a/file.txt", "ab/x.txt", "outside/secret.txt"} {
		if err := os.WriteFile(filepath.Join(base, f), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{
		"a/out_file":     "../outside/secret.txt",
		"a/out_dir":      "../outside",
		"a/out_abs":      filepath.Join(base, "outside/secret.txt"),
		"a/in_dir":       "sub",
		"a/in_file":      "file.txt",
		"a/deep":         "sub/inner",
		"a/to_b":         "../b",
		"a/dangle_out":   "../outside/new.txt",
		"a/dangle_in":    "sub/new.txt",
		"a/dangle_chain": "dangle_out",
		"a/loop1":        "loop2",
		"a/loop2":        "loop1",
		"ws_link":        "a",
	}
	for name, to := range links {
		if err := os.Symlink(to, filepath.Join(base, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := unix.Mkfifo(filepath.Join(base, "a/fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	return base
}

func TestResolve(t *testing.T) {
	base := tree(t)
	g, err := pathguard.New([]string{filepath.Join(base, "a"), filepath.Join(base, "b")})
	if err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(base, "a")
	abs := func(p string) string { return filepath.Join(base, p) }

	tests := []struct {
		name      string
		target    string
		workspace string
		want      string // path below base, when Resolve succeeds
		reason    string // when it refuses
	}{
		{name: "ExistingFile", target: abs("a/file.txt"), want: "a/file.txt"},
		{name: "NewFile", target: abs("a/new.txt"), want: "a/new.txt"},
		{name: "RelativeToWorkspace", target: "sub/new.txt", workspace: ws, want: "a/sub/new.txt"},
		{name: "DotDotInside", target: "sub/../file.txt", workspace: ws, want: "a/file.txt"},
		{name: "DotDotEscape", target: "../outside/secret.txt", workspace: ws, reason: pathguard.ReasonOutsideRoots},
		{name: "DotDotEscapeToEtc", target: "../../../../../../../../etc/passwd", workspace: ws, reason: pathguard.ReasonOutsideRoots},
		{name: "AbsoluteOutside", target: abs("outside/secret.txt"), reason: pathguard.ReasonOutsideRoots},
		{name: "AbsoluteOutsideNew", target: "/etc/orion-test-new", reason: pathguard.ReasonOutsideRoots},
		{name: "AbsoluteTargetOutsideWorkspace", target: abs("b/new.txt"), workspace: ws, reason: pathguard.ReasonOutsideWorkspace},
		{name: "AbsoluteTargetInsideWorkspace", target: abs("a/sub/new.txt"), workspace: ws, want: "a/sub/new.txt"},
		{name: "SymlinkFileOut", target: abs("a/out_file"), reason: pathguard.ReasonSymlinkEscape},
		{name: "SymlinkAbsoluteOut", target: abs("a/out_abs"), reason: pathguard.ReasonSymlinkEscape},
		{name: "SymlinkDirOutExisting", target: abs("a/out_dir/secret.txt"), reason: pathguard.ReasonSymlinkEscape},
		{name: "SymlinkDirOutNew", target: "out_dir/new.txt", workspace: ws, reason: pathguard.ReasonSymlinkEscape},
		{name: "SymlinkDirOutMissingParent", target: "out_dir/nope/new.txt", workspace: ws, reason: pathguard.ReasonSymlinkEscape},
		{name: "SymlinkDirInside", target: "in_dir/new.txt", workspace: ws, want: "a/sub/new.txt"},
		{name: "SymlinkFileInside", target: "in_file", workspace: ws, want: "a/file.txt"},
		{name: "SymlinkToOtherRoot", target: "to_b/new.txt", workspace: ws, reason: pathguard.ReasonOutsideWorkspace},
		{name: "SymlinkToOtherRootNoWorkspace", target: abs("a/to_b/new.txt"), want: "b/new.txt"},
		// ".." after a symlink applies to the real directory, as open(2)
		// would: deep/.. is sub, not a.
		{name: "DotDotAfterSymlinkIsPhysical", target: "deep/../x.txt", workspace: ws, want: "a/sub/x.txt"},
		// Lexically this leaves the roots; the walk would come back inside,
		// but both readings must agree to be allowed.
		{name: "LexicallyOutsideThoughPhysicallyInside", target: "deep/../../../a/new.txt", workspace: ws, reason: pathguard.ReasonOutsideRoots},
		{name: "DanglingSymlinkOut", target: abs("a/dangle_out"), reason: pathguard.ReasonSymlinkEscape},
		{name: "DanglingSymlinkChainOut", target: abs("a/dangle_chain"), reason: pathguard.ReasonSymlinkEscape},
		{name: "DanglingSymlinkInside", target: abs("a/dangle_in"), want: "a/sub/new.txt"},
		{name: "RelativeWithoutWorkspace", target: "file.txt", reason: pathguard.ReasonRelativePath},
		{name: "WorkspaceOutsideRoots", target: "new.txt", workspace: abs("outside"), reason: pathguard.ReasonWorkspaceNotAllowed},
		{name: "WorkspaceOutsideWithAbsoluteTarget", target: abs("a/new.txt"), workspace: abs("outside"), reason: pathguard.ReasonWorkspaceNotAllowed},
		{name: "WorkspaceRelative", target: "new.txt", workspace: "a", reason: pathguard.ReasonWorkspaceNotAllowed},
		{name: "WorkspaceMissing", target: "new.txt", workspace: abs("a/nope"), reason: pathguard.ReasonWorkspaceNotAllowed},
		{name: "WorkspaceIsFile", target: "new.txt", workspace: abs("a/file.txt"), reason: pathguard.ReasonWorkspaceNotAllowed},
		{name: "WorkspaceSymlinkIntoRoot", target: "new.txt", workspace: abs("ws_link"), want: "a/new.txt"},
		{name: "WorkspaceDotDotOut", target: "new.txt", workspace: abs("a/.."), reason: pathguard.ReasonWorkspaceNotAllowed},
		{name: "Directory", target: abs("a/sub"), reason: pathguard.ReasonIsDirectory},
		{name: "DirectoryTrailingDotDot", target: "sub/inner/..", workspace: ws, reason: pathguard.ReasonIsDirectory},
		{name: "RootItself", target: abs("a"), reason: pathguard.ReasonIsDirectory},
		{name: "SymlinkToDirectory", target: abs("a/in_dir"), reason: pathguard.ReasonIsDirectory},
		{name: "FIFO", target: abs("a/fifo"), reason: pathguard.ReasonSpecialFile},
		{name: "ParentIsFile", target: "file.txt/new.txt", workspace: ws, reason: pathguard.ReasonParentMissing},
		{name: "ParentMissingMadeAtWrite", target: "nope/deeper/new.txt", workspace: ws, want: "a/nope/deeper/new.txt"},
		{name: "ParentMissingThenDotDotOut", target: "nope/../../outside/x.txt", workspace: ws, reason: pathguard.ReasonOutsideRoots},
		{name: "SiblingPrefixRoot", target: abs("ab/x.txt"), reason: pathguard.ReasonOutsideRoots},
		{name: "SiblingPrefixRootViaDotDot", target: "../ab/x.txt", workspace: ws, reason: pathguard.ReasonOutsideRoots},
		{name: "SecondRoot", target: abs("b/new.txt"), want: "b/new.txt"},
		{name: "SecondRootFromWorkspace", target: "../b/new.txt", workspace: ws, reason: pathguard.ReasonOutsideWorkspace},
		{name: "WorkspaceParentDotDot", target: "sub/../../a/new.txt", workspace: abs("a/sub"), reason: pathguard.ReasonOutsideWorkspace},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := g.Resolve(tt.target, tt.workspace)
			if tt.reason == "" {
				if err != nil {
					t.Fatalf("Resolve(%q, %q): %v", tt.target, tt.workspace, err)
				}
				if want := abs(tt.want); got != want {
					t.Fatalf("Resolve(%q, %q) = %s, want %s", tt.target, tt.workspace, got, want)
				}
				return
			}
			var pe *pathguard.Error
			if !errors.As(err, &pe) {
				t.Fatalf("Resolve(%q, %q) = %q, %v; want a *pathguard.Error with reason %s", tt.target, tt.workspace, got, err, tt.reason)
			}
			if pe.Reason != tt.reason {
				t.Fatalf("Resolve(%q, %q): reason %s (%v), want %s", tt.target, tt.workspace, pe.Reason, err, tt.reason)
			}
			if got != "" {
				t.Errorf("Resolve returned path %q along with an error", got)
			}
			if pe.Msg == "" || pe.Error() != pe.Msg {
				t.Errorf("Error() = %q, Msg = %q; want the same non-empty message", pe.Error(), pe.Msg)
			}
		})
	}
}

func TestResolveSymlinkLoop(t *testing.T) {
	base := tree(t)
	g, err := pathguard.New([]string{filepath.Join(base, "a")})
	if err != nil {
		t.Fatal(err)
	}
	_, err = g.Resolve(filepath.Join(base, "a/loop1"), "")
	if err == nil {
		t.Fatal("Resolve of a symlink loop succeeded")
	}
	if !errors.Is(err, unix.ELOOP) {
		t.Errorf("err = %v, want ELOOP", err)
	}
}

// TestErrorMessages checks that a refusal tells the reader where the target
// went and what the roots are, so a model can correct itself.
func TestErrorMessages(t *testing.T) {
	base := tree(t)
	root := filepath.Join(base, "a")
	g, err := pathguard.New([]string{root})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		target   string
		wantPath string
		wantMsg  []string
	}{
		{
			name:     "OutsideRoots",
			target:   "../outside/secret.txt",
			wantPath: filepath.Join(base, "outside/secret.txt"),
			wantMsg:  []string{`"../outside/secret.txt"`, filepath.Join(base, "outside/secret.txt"), root},
		},
		{
			name:     "SymlinkEscape",
			target:   "out_dir/new.txt",
			wantPath: filepath.Join(root, "out_dir/new.txt"),
			wantMsg:  []string{`"out_dir/new.txt"`, filepath.Join(root, "out_dir") + " -> ../outside", root},
		},
		{
			name:     "ParentIsFile",
			target:   "file.txt/new.txt",
			wantPath: filepath.Join(root, "file.txt"),
			wantMsg:  []string{filepath.Join(root, "file.txt"), "is not a directory"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := g.Resolve(tt.target, root)
			var pe *pathguard.Error
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v, want a *pathguard.Error", err)
			}
			if got, want := pe.Path, tt.wantPath; got != want {
				t.Errorf("Path = %s, want %s", got, want)
			}
			for _, s := range tt.wantMsg {
				if !strings.Contains(pe.Msg, s) {
					t.Errorf("message %q does not mention %q", pe.Msg, s)
				}
			}
		})
	}
}

func TestRootSlashAllowsEverything(t *testing.T) {
	base := tree(t)
	g, err := pathguard.New([]string{"/"})
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(base, "outside/secret.txt")
	if got, err := g.Resolve(want, ""); err != nil || got != want {
		t.Fatalf("Resolve(%s) = %q, %v; want it unchanged", want, got, err)
	}
}

func TestNew(t *testing.T) {
	base := tree(t)
	tests := []struct {
		name    string
		roots   []string
		want    []string // below base
		wantErr bool
	}{
		{name: "OK", roots: []string{filepath.Join(base, "a"), filepath.Join(base, "b")}, want: []string{"a", "b"}},
		{name: "ResolvedAndDeduplicated", roots: []string{filepath.Join(base, "ws_link"), filepath.Join(base, "a") + "/"}, want: []string{"a"}},
		{name: "Empty", roots: []string{""}, wantErr: true},
		{name: "NoRoots", roots: nil, wantErr: true},
		{name: "Relative", roots: []string{"a"}, wantErr: true},
		{name: "Missing", roots: []string{filepath.Join(base, "nope")}, wantErr: true},
		{name: "File", roots: []string{filepath.Join(base, "a/file.txt")}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := pathguard.New(tt.roots)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("New(%q) succeeded, want an error", tt.roots)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := g.Roots()
			if len(got) != len(tt.want) {
				t.Fatalf("Roots() = %q, want %q below %s", got, tt.want, base)
			}
			for i := range got {
				if want := filepath.Join(base, tt.want[i]); got[i] != want {
					t.Errorf("Roots()[%d] = %s, want %s", i, got[i], want)
				}
			}
		})
	}
}

// TestSymlinkedRootSpelling checks that a target spelled through the root as
// configured (before symlink resolution) is accepted, as on macOS where
// /tmp is a symlink to /private/tmp.
func TestSymlinkedRootSpelling(t *testing.T) {
	base := tree(t)
	g, err := pathguard.New([]string{filepath.Join(base, "ws_link")})
	if err != nil {
		t.Fatal(err)
	}
	got, err := g.Resolve(filepath.Join(base, "ws_link/new.txt"), "")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(base, "a/new.txt"); got != want {
		t.Fatalf("Resolve = %s, want %s", got, want)
	}
}
