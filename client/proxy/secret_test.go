package proxy_test

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/orion-agent/orion/client/proxy"
)

// The secret file is made once, 0600 in a 0700 directory, and proxies
// starting at once agree on it; rotating replaces it.
func TestTokenFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "orion")
	path := filepath.Join(dir, proxy.TokenFileName)
	const n = 8
	tokens := make([]string, n)
	made := make([]bool, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			if tokens[i], made[i], err = proxy.LoadToken(path); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	creators := 0
	for i := range n {
		if tokens[i] != tokens[0] || len(tokens[i]) < 32 {
			t.Fatalf("proxies started at once got different secrets: %q", tokens)
		}
		if made[i] {
			creators++
		}
	}
	if creators != 1 {
		t.Errorf("%d of %d said they made the secret, want 1", creators, n)
	}
	for p, want := range map[string]os.FileMode{dir: 0o700, path: 0o600} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: %v, %v; want mode %04o", p, fi, err, want)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("the directory holds %d entries, want the secret file alone (no temp files left)", len(entries))
	}
	rotated, err := proxy.RotateToken(path)
	if err != nil || rotated == tokens[0] {
		t.Fatalf("RotateToken: %q, %v", rotated, err)
	}
	if again, made, err := proxy.LoadToken(path); err != nil || made || again != rotated {
		t.Errorf("after rotation LoadToken = %q, %v, %v; want the rotated secret", again, made, err)
	}
	for _, bad := range []string{"short\n", "has a space in it 0123456789\n"} {
		if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, _, err := proxy.LoadToken(path); err == nil {
			t.Errorf("secret %q accepted", bad)
		}
	}
}
