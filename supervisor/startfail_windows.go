package supervisor

import "syscall"

// errNotExecutable is what CreateProcess says of a file that is not a
// program (ERROR_BAD_EXE_FORMAT).
var errNotExecutable error = syscall.Errno(193)
