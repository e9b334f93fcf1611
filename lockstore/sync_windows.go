package lockstore

// syncDir is a no-op: Windows cannot open a directory for fsync, and
// MoveFileEx with replace is already durable on NTFS.
func syncDir(string) {}
