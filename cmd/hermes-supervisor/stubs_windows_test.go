package main

import "os"

// sentinelSignals are the console events a process can catch on Windows;
// TerminateProcess leaves no trace but the process's death.
var sentinelSignals = []os.Signal{os.Interrupt}
