package service

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestPlanPrintEscapes prints a plan whose notes, paths, file lines and
// command words hold what a user's files can (a unit named with ESC, a
// home with a newline, a bidi override): the plan shows every one escaped,
// one line per step, and writes none raw to the terminal.
func TestPlanPrintEscapes(t *testing.T) {
	evil := "h\x1b[2J\nExecStartPre=+/pwn\r\u009b\u2028\u202e\xff"
	p := Plan{Notes: []string{"Hermes' own unit " + evil + " also restarts the gateway"}}
	// A newline inside a file's data is a line of that file, shown as
	// such: keeping it out of a unit is the renderer's refusal.
	p.write("/etc/systemd/system/"+evil+".service", 0o644, []byte("[Service]\n\tEnvironment=HERMES_HOME="+strings.ReplaceAll(evil, "\n", "")+"\n"))
	p.run("systemctl", "enable", evil)
	p.do("create service "+evil, func(context.Context) error { return nil })
	p.remove("/home/" + evil)
	var b strings.Builder
	if err := p.Print(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for i, r := range out {
		if r != '\n' && r != '\t' && ((r == utf8.RuneError && !strings.HasPrefix(out[i:], "\ufffd")) || !strconv.IsGraphic(r)) {
			t.Errorf("raw %U at %d in:\n%s", r, i, out)
		}
	}
	if n := strings.Count(out, "\n"); n != 7 {
		t.Errorf("%d lines, want 7:\n%s", n, out)
	}
	for _, want := range []string{
		`note: Hermes' own unit h\u001b[2J\nExecStartPre=+/pwn\r\u009b\u2028\u202e\ufffd also restarts`,
		"write " + strconv.QuoteToGraphic("/etc/systemd/system/"+evil+".service") + " (mode 0644):\n[Service]\n\tEnvironment=HERMES_HOME=h\\u001b[2JExecStartPre=+/pwn\\r\\u009b\\u2028\\u202e\\ufffd\n",
		`run systemctl enable 'h\u001b[2J\nExecStartPre=+/pwn`,
		`do create service h\u001b[2J\nExecStartPre`,
		"remove " + strconv.QuoteToGraphic("/home/"+evil) + "\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("plan lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\nExecStartPre") {
		t.Errorf("a value made a line of its own:\n%s", out)
	}
}
