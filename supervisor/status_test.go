package supervisor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes-agent/hermes-supervisor/internal/testdir"
)

// A state file that names a cgroup for its gateway, forged or left by a
// supervisor long dead, is never shown as the gateway's cgroup: only the
// live supervisor knows which cgroup it made.
func TestStateFileCgroupIsNotBelieved(t *testing.T) {
	path := filepath.Join(testdir.New(t), "supervisor.json")
	forged := `{"state":"running","home":"/h","lock_dir":"/l","supervisor":{"pid":99999},
		"child":{"pid":1,"argv":["hermes","gateway","run"],"started_at":"2026-01-01T00:00:00Z","cgroup":"/sys/fs/cgroup"}}`
	if err := os.WriteFile(path, []byte(forged), 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := ReadStatusFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Child == nil || st.Child.Cgroup != "" {
		t.Fatalf("child read from the state file: %+v, want it without a cgroup", st.Child)
	}
	var b strings.Builder
	if err := st.WriteText(&b, time.Now()); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "cgroup:") {
		t.Errorf("status from a state file names a cgroup:\n%s", b.String())
	}
}
