package proxy

import (
	"fmt"
	"path/filepath"
	"strings"
)

// below checks that dir, a workspace a request names, is root or a
// directory below it, both as written and once symbolic links are
// resolved (a link inside the workspace may point anywhere). It is the
// check of a proxy whose workspace is fixed (Config.FixedWorkspace).
func below(root, dir string) error {
	refuse := func(why string) error {
		return fmt.Errorf("%s %q is refused: %s. This proxy serves %s only; name it or a directory below it, or leave the header out",
			HeaderWorkspace, dir, why, root)
	}
	if !filepath.IsAbs(dir) {
		return refuse("it is not an absolute path")
	}
	if !within(filepath.Clean(root), filepath.Clean(dir)) {
		return refuse("it is outside the workspace")
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return refuse("the workspace cannot be resolved: " + err.Error())
	}
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return refuse("it cannot be resolved (it must exist)")
	}
	if !within(realRoot, realDir) {
		return refuse("a symbolic link takes it outside the workspace")
	}
	return nil
}

// within reports whether dir is root or below it; both are clean.
func within(root, dir string) bool {
	rel, err := filepath.Rel(root, dir)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}
