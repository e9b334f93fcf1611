//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// floorRound lays out n files as sweepRound does and removes the stale
// ones with nothing but the system calls a sweep makes, on as many
// goroutines as a sweep keeps busy: the floor of this way of sweeping on
// this host. A sweep's cost above it is judging (the /proc reads of the
// pids named, parsing, Hermes' rules) and our code.
func (o *owners) floorRound(ctx context.Context, n int, rnd *rand.Rand) (time.Duration, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	root, err := os.MkdirTemp("", "hsbench-floor")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(root)
	dir := filepath.Join(root, "locks")
	if err := os.Mkdir(dir, 0o700); err != nil {
		return 0, err
	}
	if _, err := o.layout(dir, n, rnd); err != nil {
		return 0, err
	}
	keep := make(map[string]bool, n/3+1)
	for i := range n {
		if layoutKeeps(i) {
			keep[filepath.Base(layoutPath(dir, i))] = true
		}
	}
	t0 := time.Now()
	err = bareSweep(dir, keep, runtime.GOMAXPROCS(0))
	took := time.Since(t0)
	if err != nil {
		return 0, fmt.Errorf("bare sweep of %d files: %w", n, err)
	}
	// As sweepRound checks the sweep: the kept files and the empty bin.
	left, err := os.ReadDir(dir)
	if err != nil || len(left) != len(keep)+1 {
		return 0, fmt.Errorf("bare sweep of %d files left %d names (%v), want %d", n, len(left), err, len(keep)+1)
	}
	return took, nil
}

// bareSweep lists dir and removes the files keep does not name through a
// bin in it, on w goroutines, each with a bin of its own as a sweep's
// goroutines have.
func bareSweep(dir string, keep map[string]bool, w int) error {
	ld, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(ld), dir)
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return err
	}
	if err := unix.Mkdirat(ld, "bin", 0o700); err != nil {
		return err
	}
	bin, err := unix.Openat(ld, "bin", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(bin)
	// As a sweep's goroutines do, each moves into a bin of its own: the
	// first into the bin, the others into bin/<k>, all made before any
	// goroutine starts.
	bins := []int{bin}
	defer func() {
		for _, b := range bins[1:] {
			unix.Close(b)
		}
	}()
	for k := 1; k < min(w, len(names)); k++ {
		sub := strconv.Itoa(k)
		if err := unix.Mkdirat(bin, sub, 0o700); err != nil {
			return err
		}
		b, err := unix.Openat(bin, sub, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		bins = append(bins, b)
	}
	errs := make([]error, w)
	var wg sync.WaitGroup
	for k, mine := range bins {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := k; i < len(names) && errs[k] == nil; i += w {
				errs[k] = bareOne(ld, mine, names[i], keep[names[i]])
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// bareOne is what a sweep asks of the kernel for one file: open, fstat
// and read it to judge it (readIn), and close it if it is kept; else,
// with the file still open, fstatat its name, lock it, rename it into the
// bin, fstatat it there, unlink it and close it (removeIn).
func bareOne(ld, bin int, name string, kept bool) error {
	const flags = unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC
	var st unix.Stat_t
	var buf [1024]byte
	fd, err := unix.Openat(ld, name, flags, 0)
	if err != nil {
		return err
	}
	serr := unix.Fstat(fd, &st)
	_, rerr := unix.Read(fd, buf[:])
	if err := errors.Join(serr, rerr); err != nil || kept {
		return errors.Join(err, unix.Close(fd))
	}
	aside := name + ".floor"
	return errors.Join(unix.Fstatat(ld, name, &st, unix.AT_SYMLINK_NOFOLLOW), unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB),
		unix.Renameat(ld, name, bin, aside), unix.Fstatat(bin, aside, &st, unix.AT_SYMLINK_NOFOLLOW),
		unix.Unlinkat(bin, aside, 0), unix.Close(fd))
}
