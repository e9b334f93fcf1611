// Command child is the process every supervisor in the benchmark runs: it
// writes its pid to the file named by its argument through a rename, so a
// reader never sees half a file, and blocks until killed. It imports almost
// nothing, so that its start-up, the floor of every restart, is cheap.
package main

import (
	"os"
	"strconv"
	"time"
)

func main() {
	if len(os.Args) != 2 {
		os.Stderr.WriteString("usage: child PIDFILE\n")
		os.Exit(2)
	}
	path := os.Args[1]
	pid := strconv.Itoa(os.Getpid())
	tmp := path + "." + pid + ".tmp"
	if err := os.WriteFile(tmp, []byte(pid+"\n"), 0o644); err != nil {
		os.Exit(1)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Exit(1)
	}
	for {
		time.Sleep(time.Hour)
	}
}
