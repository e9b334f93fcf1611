package supervisor

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/testdir"
)

func TestNeverStarts(t *testing.T) {
	dir := testdir.New(t)
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, []byte("not a program\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		argv  []string
		never bool
	}{
		{"not on PATH", []string{"hermes-supervisor-no-such-command"}, true},
		{"missing path", []string{filepath.Join(dir, "missing")}, true},
		// On Windows a file without a program extension is not found:
		// it never starts there either.
		{"not executable", []string{plain}, true},
		{"runs", []string{self, "-test.run=^$"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command(c.argv[0], c.argv[1:]...)
			err := cmd.Start()
			if err == nil {
				_ = cmd.Wait()
			}
			fix, never := neverStarts(err)
			if err != nil && never != c.never || err == nil && c.never {
				t.Fatalf("start error %v: never starts %v, want %v", err, never, c.never)
			}
			if never && fix == "" {
				t.Fatalf("no fix named for %v", err)
			}
		})
	}
}
