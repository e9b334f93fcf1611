//go:build !windows

package service

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/testdir"
	"howett.net/plist"
)

// deployDir is the repository's deploy/, from this package's directory.
const deployDir = "../../deploy"

// TestDeployFiles fails when a file under deploy/ differs from what the
// templates render now (`make deploy` rewrites them), or when deploy/
// holds a file nobody renders.
func TestDeployFiles(t *testing.T) {
	files := mustDeployFiles(t)
	if *update {
		for rel, data := range files {
			path := filepath.Join(deployDir, rel)
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	for rel, want := range files {
		got, err := os.ReadFile(filepath.Join(deployDir, rel))
		if err != nil {
			t.Errorf("deploy/%s: %v: run make deploy", rel, err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("deploy/%s differs from what install renders: run make deploy", rel)
		}
	}
	var agent map[string]any
	if _, err := plist.Unmarshal(files["launchd/"+Label+".plist"], &agent); err != nil || agent["Label"] != Label {
		t.Errorf("the packaged plist does not parse as the agent %s: %v", Label, err)
	}
	var onDisk []string
	_ = filepath.WalkDir(deployDir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() != "README.md" {
			rel, _ := filepath.Rel(deployDir, path)
			onDisk = append(onDisk, filepath.ToSlash(rel))
		}
		return nil
	})
	for _, rel := range onDisk {
		if _, ok := files[rel]; !ok {
			t.Errorf("deploy/%s is rendered by nothing: remove it or render it in DeployFiles", rel)
		}
	}
}

// TestDeployUnitsVerify checks the packaged units with systemd-analyze,
// as the installed ones are: clean, with no output.
func TestDeployUnitsVerify(t *testing.T) {
	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		t.Skip("needs systemd-analyze (apt-get install systemd; make test does)")
	}
	files := mustDeployFiles(t)
	for _, scope := range []string{"system", "user"} {
		t.Run(scope, func(t *testing.T) {
			dir := testdir.New(t)
			// ExecStart must exist here: point it at a real binary.
			unit := strings.ReplaceAll(string(files["systemd/"+scope+"/"+Name+".service"]), "/usr/bin/hermes-supervisor", "/bin/true")
			unit = strings.ReplaceAll(unit, "User=hermes\n", "")
			path := filepath.Join(dir, Name+".service")
			if err := os.WriteFile(path, []byte(unit), 0o644); err != nil {
				t.Fatal(err)
			}
			args := []string{"--man=no", "verify", path}
			cmd := exec.Command("systemd-analyze", args...)
			if scope == "user" {
				runtime := testdir.New(t)
				if err := os.Chmod(runtime, 0o700); err != nil {
					t.Fatal(err)
				}
				cmd = exec.Command("systemd-analyze", slices.Insert(args, 0, "--user")...)
				cmd.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+runtime)
			}
			if out, err := cmd.CombinedOutput(); err != nil || len(out) > 0 {
				t.Errorf("systemd-analyze verify: %v\n%s\n%s", err, out, unit)
			}
		})
	}
}
