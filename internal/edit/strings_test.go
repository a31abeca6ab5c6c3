package edit_test

import "strings"

// replaceAll replaces each old, new pair in s.
func replaceAll(s string, pairs ...string) string {
	return strings.NewReplacer(pairs...).Replace(s)
}
