//go:build !linux

package store

// DropMappedPages does nothing off Linux.
func (s *Store) DropMappedPages() error { return nil }
