package pathguard

import (
	"path"
	"strings"
	"testing"
)

// TestFixedEndsNeverRefuseAMatch: the literal start and end taken from a
// pattern let a component skip path.Match only when path.Match would not
// match it either, or a protected name (*.code-workspace) would go through.
func TestFixedEndsNeverRefuseAMatch(t *testing.T) {
	patterns := []string{`a\*b`, `\*x`, `x\`, `[a-c]x`, `x[a-c]`, `[]a]`, `x[`, `?a?`, `a*a`, `*`, `[^x]y*`, `\[z\]`}
	for _, n := range DefaultNames() {
		if isPattern(n) && !strings.Contains(n, "/") {
			patterns = append(patterns, strings.ToLower(foldName(n)))
		}
	}
	pieces := []string{"", "a", "b", "x", "y", "z", "*", "[", "]", "\\", ".", "aider", ".aider", "code-workspace", "mise", "toml", "é"}
	var names []string
	for _, p := range pieces {
		for _, q := range pieces {
			for _, r := range pieces {
				names = append(names, p+q+r)
			}
		}
	}
	for _, p := range patterns {
		f := fixedEndsOf(p)
		for _, n := range append(names, p) {
			if ok, err := path.Match(p, n); ok && err == nil && (!strings.HasPrefix(n, f.prefix) || !strings.HasSuffix(n, f.suffix)) {
				t.Errorf("pattern %q matches %q, which lacks its fixed ends %q...%q", p, n, f.prefix, f.suffix)
			}
		}
	}
}
