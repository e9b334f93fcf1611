//go:build unix

package lockstore

import "os"

// syncDir makes a rename durable; best effort, since some file systems
// refuse to fsync directories.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}
