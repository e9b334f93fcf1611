//go:build linux

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// unlinkResult is what removing one small file costs, fresh and once
// written back: the sweep section's rounds remove files moments after
// they were written, and on disk a file's blocks may cost more to free.
type unlinkResult struct {
	files          int
	fresh, flushed time.Duration // per file
}

// unlinkCost times plain unlinks of n small files twice: just written,
// and after syncfs has written them back.
func unlinkCost(n int) (unlinkResult, error) {
	dir, err := os.MkdirTemp("", "hsbench-unlink")
	if err != nil {
		return unlinkResult{}, err
	}
	defer os.RemoveAll(dir)
	round := func(flush bool) (time.Duration, error) {
		for i := range n {
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprint(i)), make([]byte, 256), 0o600); err != nil {
				return 0, err
			}
		}
		if flush {
			d, err := os.Open(dir)
			if err != nil {
				return 0, err
			}
			err = unix.Syncfs(int(d.Fd()))
			d.Close()
			if err != nil {
				return 0, err
			}
		}
		t0 := time.Now()
		for i := range n {
			if err := unix.Unlink(filepath.Join(dir, fmt.Sprint(i))); err != nil {
				return 0, err
			}
		}
		return time.Since(t0) / time.Duration(n), nil
	}
	r := unlinkResult{files: n}
	if r.fresh, err = round(false); err != nil {
		return r, err
	}
	r.flushed, err = round(true)
	return r, err
}
