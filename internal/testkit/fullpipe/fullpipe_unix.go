//go:build unix

package fullpipe

import (
	"errors"
	"os"
	"syscall"
	"testing"
)

func full(t testing.TB) (r, w *os.File) {
	t.Helper()
	var p [2]int
	if err := syscall.Pipe(p[:]); err != nil {
		t.Fatal(err)
	}
	if err := syscall.SetNonblock(p[1], true); err != nil {
		t.Fatal(err)
	}
	chunk := []byte("################################################################")
	for _, n := range []int{len(chunk), 1} {
		for {
			_, err := syscall.Write(p[1], chunk[:n])
			if errors.Is(err, syscall.EAGAIN) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := syscall.SetNonblock(p[1], false); err != nil {
		t.Fatal(err)
	}
	r, w = os.NewFile(uintptr(p[0]), "|0"), os.NewFile(uintptr(p[1]), "|1")
	t.Cleanup(func() { r.Close(); w.Close() })
	return r, w
}
