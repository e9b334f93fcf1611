package main

import (
	"fmt"
	"os"

	"github.com/rogpeppe/go-internal/testscript"
	"golang.org/x/sys/windows"
)

// Windows has no signals to send but the kill.
func sendSignal(pid int, name string) error {
	if name != "KILL" {
		return fmt.Errorf("signal %s: not on Windows", name)
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	defer p.Release()
	return p.Kill()
}

// resume has nothing to continue on Windows, where nothing is stopped.
func resume(int) {}

// underWine is set when the tests run under Wine.
var underWine = windows.NewLazySystemDLL("ntdll.dll").NewProc("wine_get_version").Find() == nil

// nobody has no Windows form: the scripts that use it run on Linux.
func cmdNobody(ts *testscript.TestScript, _ bool, _ []string) {
	ts.Fatalf("nobody: not on Windows")
}
