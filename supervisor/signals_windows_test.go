package supervisor

// killedHard reports whether e is how killHard's TerminateProcess looks:
// exit code 1, with nothing to tell it from a plain exit 1.
func killedHard(e Exit) bool { return e.Code == 1 && e.Signal == "" }
