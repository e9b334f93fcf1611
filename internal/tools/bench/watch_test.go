//go:build linux

package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

func TestDirWatchWakesOnARename(t *testing.T) {
	dir := t.TempDir()
	w, err := newDirWatch(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	path := filepath.Join(dir, "child.pid")
	go func() {
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, []byte("4242\n"), 0o644); err == nil {
			_ = os.Rename(tmp, path)
		}
	}()
	checks := 0
	err = w.until(context.Background(), 10*time.Second, func() bool {
		checks++
		return readBarePID(path) == 4242
	})
	if err != nil {
		t.Fatalf("until: %v after %d checks", err, checks)
	}
}

func TestDirWatchGivesUpAtItsLimit(t *testing.T) {
	w, err := newDirWatch(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.until(context.Background(), 30*time.Millisecond, func() bool { return false }); err == nil {
		t.Fatal("until returned nil for a condition that never held")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := w.until(ctx, time.Hour, func() bool { return false }); !errors.Is(err, context.Canceled) {
		t.Fatalf("until with a cancelled context: %v, want context.Canceled", err)
	}
}

// A gateway makes its home as it starts: waitPID waits for the directory
// before it waits for the file in it.
func TestWaitPIDForAFileInADirectoryNotYetMade(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	path := filepath.Join(home, "child.pid")
	go func() {
		if err := os.Mkdir(home, 0o700); err == nil {
			_ = os.WriteFile(path, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644)
		}
	}()
	pid, err := waitPID(context.Background(), path, readBarePID, 0, 10*time.Second)
	if err != nil || pid != os.Getpid() {
		t.Fatalf("waitPID = %d, %v; want our pid %d", pid, err, os.Getpid())
	}
}
