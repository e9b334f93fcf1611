//go:build linux || darwin

package safefs

import (
	"errors"
	"fmt"
	"os"
)

// linkRename is the fallback where the OS or file system has no
// no-replace rename: link fails if newpath exists, and the unlink then
// drops the old name. A crash between the two leaves both names, which
// costs no bytes.
func linkRename(oldpath, newpath string) error {
	if err := os.Link(oldpath, newpath); err != nil {
		var le *os.LinkError
		if errors.As(err, &le) {
			return le.Err
		}
		return err
	}
	if err := os.Remove(oldpath); err != nil {
		return fmt.Errorf("linked, but %w", err)
	}
	return nil
}
