//go:build linux

package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
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
