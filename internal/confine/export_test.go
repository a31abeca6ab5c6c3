package confine

// LinkNoReplace exposes the link(2) fallback, which the kernel under test
// may never need.
func (d *Dir) LinkNoReplace(oldname, newname string) error { return d.linkNoReplace(oldname, newname) }
