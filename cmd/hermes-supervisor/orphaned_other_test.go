//go:build unix && !linux

package main

// orphanedGroup is false where /proc does not tell: SIGTSTP is sent as asked.
func orphanedGroup(int) bool { return false }
