package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"testing"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/conformance"
)

// TestConformanceCLI runs `sweep --dry-run --json`, then `sweep --json`,
// the real binary, on every layout of hermes-verdicts.md and ours, and
// checks the verdict and action of each, and what is left on disk.
func TestConformanceCLI(t *testing.T) {
	exe, err := exec.LookPath("hermes-supervisor")
	if err != nil {
		t.Fatal(err)
	}
	bin := conformance.NewBin(t)
	for _, row := range conformance.RowsHere() {
		t.Run(row.ID, func(t *testing.T) {
			e := conformance.NewEnv(t, bin)
			path := row.Build(e)
			sweep := func(args ...string) map[string]entry {
				t.Helper()
				cmd := exec.Command(exe, append([]string{"--home", e.Home, "--lock-dir", e.LockDir, "sweep", "--json"}, args...)...)
				cmd.Env = append(os.Environ(), "HERMES_SUPERVISOR_CONFIG=")
				var stderr bytes.Buffer
				cmd.Stderr = &stderr
				out, err := cmd.Output()
				if err != nil {
					t.Fatalf("sweep %v: %v\n%s", args, err, stderr.Bytes())
				}
				var es []entry
				if err := json.Unmarshal(out, &es); err != nil {
					t.Fatalf("sweep %v printed %s: %v", args, out, err)
				}
				m := map[string]entry{}
				for _, e := range es {
					m[e.Path] = e
				}
				return m
			}
			got, ok := sweep("--dry-run")[path]
			if !ok || got.Kind != row.File || got.Verdict != row.Verdict || got.Action != row.Action {
				t.Fatalf("%s (%s): sweep --dry-run says %+v, want %s %s/%s", row.ID, row.Layout, got, row.File, row.Verdict, row.Action)
			}
			before := conformance.Snap(t, path)
			want := conformance.RealAction(row.Action)
			if got := sweep()[path]; got.Action != want {
				t.Fatalf("%s: sweep did %+v, want %s", row.ID, got, want)
			}
			_, statErr := os.Stat(path)
			if exists := statErr == nil; exists != conformance.Kept(want) || (!exists && !errors.Is(statErr, os.ErrNotExist)) {
				t.Fatalf("%s: file exists=%v after %s (%v)", row.ID, exists, want, statErr)
			}
			if want == "keep" || want == "ok" {
				before.Same(t, path) // a kept file keeps its bytes and inode
			}
		})
	}
}

type entry struct {
	Path, Kind, Verdict, Action, Reason string
}
