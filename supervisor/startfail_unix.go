//go:build unix

package supervisor

import "syscall"

// errNotExecutable is what execve says of a file in no format it runs.
var errNotExecutable error = syscall.ENOEXEC
