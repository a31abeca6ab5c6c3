package mcpserver

// SetFSEditHook runs f between edit_file's read and its write, where a
// concurrent change would land.
func SetFSEditHook(s *Server, f func(target string)) { s.fsEditHook = f }
