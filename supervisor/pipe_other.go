//go:build !linux

package supervisor

import "os"

// outputPipe makes one of a gateway's output pipes, r ours and w the
// gateway's. Without pipe2 (darwin) os.Pipe takes exec's fork lock to set
// close-on-exec, which the Linux version has no need of.
func outputPipe() (r, w *os.File, err error) { return os.Pipe() }
