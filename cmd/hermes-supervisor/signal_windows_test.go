package main

import (
	"fmt"
	"os"
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
