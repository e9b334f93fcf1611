//go:build linux

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

const tracefsDir = "/sys/kernel/tracing"

// ftrace is the kernel's tracing, set up for one measurement and put back
// as it was.
type ftrace struct {
	dir     string
	mounted bool
	undo    []func()
}

// openFtrace mounts tracefs when it is not mounted yet; tracing needs
// root, so a bench run by a user reports the section as not measured.
func openFtrace() (*ftrace, error) {
	t := &ftrace{dir: tracefsDir}
	if _, err := os.Stat(filepath.Join(t.dir, "trace_marker")); err != nil {
		if err := unix.Mount("nodev", t.dir, "tracefs", 0, ""); err != nil {
			return nil, fmt.Errorf("the kernel's tracing is not mounted at %s and could not be (it needs root): %w", t.dir, err)
		}
		t.mounted = true
	}
	return t, nil
}

// set writes value into one of tracefs' settings, remembering what to
// put back.
func (t *ftrace) set(name, value string) error {
	path := filepath.Join(t.dir, name)
	old, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := t.write(name, value); err != nil {
		return err
	}
	var was []string
	for _, l := range strings.Split(string(old), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			was = append(was, l)
		}
	}
	t.undo = append(t.undo, func() {
		if strings.HasPrefix(name, "set_") {
			// A list (set_event, set_event_pid) reads back as its
			// entries, one a line: emptied and refilled, it is as it was.
			_ = t.write(name, "")
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				return
			}
			defer f.Close()
			for _, l := range was {
				_, _ = f.WriteString(l + "\n")
			}
			return
		}
		// A value reads back as itself, or as "7 (expanded: 1408)", the
		// buffer's size before and after its first use.
		if len(was) > 0 {
			_ = t.write(name, strings.Fields(was[0])[0])
		}
	})
	return nil
}

// write writes into one of tracefs' files: a setting, or an action such as
// emptying the trace.
func (t *ftrace) write(name, value string) error {
	path := filepath.Join(t.dir, name)
	if err := os.WriteFile(path, []byte(value+"\n"), 0); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

func (t *ftrace) close() {
	for i := len(t.undo) - 1; i >= 0; i-- {
		t.undo[i]()
	}
	if t.mounted {
		_ = unix.Unmount(t.dir, 0)
	}
}
