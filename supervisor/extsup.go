package supervisor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/hermes-agent/hermes-supervisor/platform/proctree"
)

// ExternalSupervisorFlag is Hermes' `gateway run` flag (from about
// v0.20.5) saying that a supervisor restarts the gateway: `hermes update`
// then asks it to exit 75 and be relaunched, rather than starting a
// detached `gateway run --replace` outside any supervisor. Older CLIs
// reject it (argparse: exit 2, "unrecognized arguments"), so it is passed
// only where the installed Hermes accepts it.
const ExternalSupervisorFlag = "--external-supervisor"

// ExtSupProbeTimeout bounds the probe of `gateway run --help`: a Python
// start-up on a loaded machine takes seconds, never this long.
const ExtSupProbeTimeout = 30 * time.Second

// ExtSup says whether the gateway's argv carries --external-supervisor
// and why: status shows it.
type ExtSup struct {
	Passed bool   `json:"passed"`
	Why    string `json:"why"`
}

// IsHermesGateway reports whether argv is Hermes' own gateway command as
// the supervisor builds it, `hermes [-p NAME] gateway run` (the program
// by any path): the only command the probe may change. A command of the
// user's own (-- COMMAND, the config file's "command") is run as written.
func IsHermesGateway(argv []string) bool {
	if len(argv) < 3 {
		return false
	}
	prog := strings.ToLower(filepath.Base(argv[0]))
	if prog != "hermes" && prog != "hermes.exe" {
		return false
	}
	rest := argv[1:]
	if len(rest) == 4 && (rest[0] == "-p" || rest[0] == "--profile") {
		rest = rest[2:]
	}
	return slices.Equal(rest, []string{"gateway", "run"})
}

// WithExternalSupervisor returns the gateway command for this start: with
// --external-supervisor appended when argv is Hermes' own gateway command
// (IsHermesGateway) and its `gateway run --help`, run once now with env in
// dir within ExtSupProbeTimeout, lists the flag; argv unchanged otherwise,
// with the reason. Asking --help costs one Python start-up and nothing
// else: argparse prints and exits before the gateway touches any file.
func WithExternalSupervisor(ctx context.Context, argv, env []string, dir string, r *proctree.Reaper) ([]string, ExtSup) {
	if !IsHermesGateway(argv) {
		return argv, ExtSup{Why: "not passed: the gateway command is not `hermes gateway run`, and is run as written"}
	}
	ctx, cancel := context.WithTimeout(ctx, ExtSupProbeTimeout)
	defer cancel()
	probe := append(slices.Clone(argv), "--help")
	cmd := exec.CommandContext(ctx, probe[0], probe[1:]...)
	cmd.Env = childEnv(os.Environ(), env)
	cmd.Dir = dir
	var out bytes.Buffer
	// One writer for both: exec then gives them one pipe and one copier.
	w := &capped{w: &out, n: 1 << 20}
	cmd.Stdout, cmd.Stderr = w, w
	// A helper that keeps the pipes open must not hold the probe.
	cmd.WaitDelay = 2 * time.Second
	err := runProbe(ctx, cmd, r)
	var ee *proctree.ExitError
	switch {
	case ctx.Err() != nil:
		return argv, ExtSup{Why: fmt.Sprintf("not passed: `%s --help` did not answer within %s", strings.Join(probe[1:len(probe)-1], " "), ExtSupProbeTimeout)}
	case errors.As(err, &ee):
		return argv, ExtSup{Why: fmt.Sprintf("not passed: `%s --help` exited %d", strings.Join(probe[1:len(probe)-1], " "), ee.Code)}
	case err != nil:
		return argv, ExtSup{Why: fmt.Sprintf("not passed: cannot ask hermes: %v", err)}
	case !bytes.Contains(out.Bytes(), []byte(ExternalSupervisorFlag)):
		return argv, ExtSup{Why: "not passed: this Hermes does not accept it (older than about v0.20.5); `hermes update` treats the gateway as one run by hand"}
	}
	return append(slices.Clone(argv), ExternalSupervisorFlag), ExtSup{Passed: true, Why: "passed: this Hermes accepts it, and `hermes update` asks the gateway to restart through us"}
}

// runProbe runs cmd as a Tree of r: a child subreaper must start every
// child as one (see proctree.Reaper), or the Reaper takes the probe for an
// orphan of the gateway's tree and reaps it before exec's Wait can.
func runProbe(ctx context.Context, cmd *exec.Cmd, r *proctree.Reaper) error {
	t, err := proctree.Start(cmd, nil, r)
	if err != nil {
		return err
	}
	_, err = t.Wait(ctx)
	return err
}

// capped writes at most n bytes to w and drops the rest: a probe that
// prints without end must not cost memory.
type capped struct {
	w *bytes.Buffer
	n int
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.n - c.w.Len(); room > 0 {
		c.w.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}
