//go:build unix

package lockstore

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestPythonsLowestIntLimit holds the reader's limit to real Python's: a
// gateway started with PYTHONINTMAXSTRDIGITS=640 (or -X
// int_max_str_digits=640), the lowest Python accepts, raises on a record
// with an integer of 641 digits and removes nothing, and the supervisor
// cannot know the environment of every Hermes process that reads the
// record. Judged on 4300, such a record of a dead pid was swept here while
// that gateway kept it: looser than Hermes.
func TestPythonsLowestIntLimit(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("python3, which make test installs: %v", err)
	}
	if out, err := exec.Command(py, "-X", "int_max_str_digits=639", "-c", "pass").CombinedOutput(); err == nil {
		t.Fatalf("python3 took a limit of 639 digits, below the 640 the reader assumes is the lowest: %s", out)
	}
	const loads = "import json, sys\ntry:\n    json.loads(sys.stdin.read())\nexcept ValueError as e:\n    print(type(e).__name__)\n"
	for _, n := range []int{640, 641} {
		for _, body := range []string{
			strings.Repeat("9", n),
			`{"pid": 7, "metadata": {"n": ` + strings.Repeat("9", n) + `}}`,
		} {
			for _, env := range [][]string{{"-X", "int_max_str_digits=640"}, {}} {
				cmd := exec.Command(py, append(env, "-c", loads)...)
				cmd.Env = append(os.Environ(), "PYTHONINTMAXSTRDIGITS=640")
				cmd.Stdin = strings.NewReader(body)
				out, err := cmd.Output()
				if err != nil {
					t.Fatalf("python3 %v: %v", env, err)
				}
				pyRaises := strings.TrimSpace(string(out)) == "ValueError"
				if pyRaises != (n > 640) {
					t.Fatalf("python3 %v with PYTHONINTMAXSTRDIGITS=640 on %d digits: raised %v", env, n, pyRaises)
				}
				_, _, rerr := readJSONFile([]byte(body), true)
				var ce *CorruptError
				if got := errors.As(rerr, &ce) && ce.hermesRaises; got != pyRaises {
					t.Fatalf("%d digits: the reader says Hermes raises %v (%v); Python under its lowest limit: %v", n, got, rerr, pyRaises)
				}
			}
		}
	}
}
