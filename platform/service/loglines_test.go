package service

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/testdir"
)

// A failed install shows the lines that say what to do, not the routine
// lines logged after them: under Wine the 15 lines shown were all sweep
// lines, and the warning that Hermes' own gateway held the home was not
// among them.
func TestExplainingLines(t *testing.T) {
	const held = "home is held by a live gateway not started by this supervisor (gateway.pid names pid 4242); stop it with `hermes gateway stop`"
	var console, js []string
	console = append(console, "2026-11-24T10:00:00.000Z\tINFO\tstate\t{\"to\": \"starting\"}")
	js = append(js, `{"level":"info","ts":"2026-11-24T10:00:00.000Z","msg":"state"}`)
	console = append(console, "2026-11-24T10:00:01.000Z\tWARN\t"+held)
	js = append(js, fmt.Sprintf(`{"level":"warn","ts":"2026-11-24T10:00:01.000Z","msg":%q}`, held))
	for i := range 40 {
		console = append(console, fmt.Sprintf("2026-11-24T10:00:02.000Z\tINFO\tsweep\t{\"file\": \"lock-%d\", \"action\": \"keep\"}", i))
		js = append(js, fmt.Sprintf(`{"level":"info","msg":"sweep","file":"lock-%d"}`, i))
	}
	dir := testdir.New(t)
	for name, lines := range map[string][]string{"console": console, "json": js} {
		path := filepath.Join(dir, name+".log")
		if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		got := strings.Split(explainingLines(path, 15), "\n")
		if len(got) != 15 || !strings.Contains(got[0], "stop it with `hermes gateway stop`") || got[14] != lines[len(lines)-1] {
			t.Errorf("%s: the lines shown are\n%s\nwant the warning first, then the latest 14", name, strings.Join(got, "\n"))
		}
	}
	if got := explainingLines(filepath.Join(dir, "missing.log"), 15); got != "" {
		t.Errorf("a missing log gave %q", got)
	}
}
