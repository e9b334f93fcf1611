// Package alarm is a one-shot deadline that one goroutine waits for while
// others move it, cheap enough to move on every keep-alive.
package alarm
