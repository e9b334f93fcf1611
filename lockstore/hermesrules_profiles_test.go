package lockstore

import "testing"

// workHome is a named profile's home under ruleHome.
const workHome = ruleHome + "/profiles/work"

// profileFacts are the facts of the profile rows (issue 26): files of a
// named profile's home, and token locks a multiplexer holds, judged from
// a named profile's supervisor.
func profileFacts() map[string]facts {
	coder := []string{"/opt/bin/hermes", "-p", "coder", "gateway", "run"}
	work := []string{"/opt/bin/hermes", "-p", "work", "gateway", "run"}
	bare := argvGateway
	inWork := func(f facts) facts { f.home = workHome; return f }
	noLock := func(file string, p procFacts) facts { return inWork(facts{file: file, procs: procs(pidGateway, p)}) }
	st := func(argv []string) facts {
		return noLock(rec(pidGateway, []string{"/usr/local/bin/hermes", "gateway", "run"}, workHome, "gateway_state", "running", "start_time", nil), alive(argv...))
	}
	recd := func(home string, fields ...any) string {
		return rec(pidGateway, []string{"/usr/local/bin/hermes", "gateway", "run"}, home, fields...)
	}
	return map[string]facts{
		"N01": noLock(recd(workHome, "start_time", nil), alive(coder...)),
		"N02": noLock(recd(workHome), alive(work...)),
		"N03": noLock(recd(workHome), alive("/opt/bin/hermes", "--profile=work", "gateway", "run")),
		"N04": noLock(recd(workHome), alive("/opt/bin/hermes", "HERMES_HOME="+workHome, "gateway", "run")),
		"N05": noLock(rec(pidGateway, bare, workHome, "start_time", nil), alive(bare...)),
		"N06": noLock(rec(pidGateway, bare, workHome), alive(bare...)),
		"N07": st(coder),
		"N08": st(work),
		"N09": {file: recd(ruleHome), procs: procs(pidGateway, alive(coder...))},
		"N10": inWork(facts{file: recd(ruleHome, "profile", "default"), procs: procs(pidGateway, alive(bare...))}),
		"N11": inWork(facts{file: recd(ruleHome + "/profiles/coder"), procs: procs(pidGateway, alive(coder...))}),
		"N12": inWork(facts{file: recd(ruleHome, "profile", "default"), procs: procs(pidGateway, deadProc)}),
	}
}

// TestCommandLineBelongsToProfile tries Hermes' rule on the spellings its
// own units, the s6 image and users write, and on near misses.
func TestCommandLineBelongsToProfile(t *testing.T) {
	for _, tt := range []struct {
		argv []string
		home string
		want bool
	}{
		{[]string{"hermes", "-p", "work", "gateway", "run"}, workHome, true},
		{[]string{"python", "-m", "hermes_cli.main", "--profile", "work", "gateway", "run"}, workHome, true},
		{[]string{"hermes", "--profile=work", "gateway", "run"}, workHome, true},
		{[]string{"hermes", "-P", "WORK", "gateway", "run"}, workHome, true}, // Hermes lower-cases the line
		{[]string{"hermes", "HERMES_HOME=" + workHome, "gateway", "run"}, workHome, true},
		{[]string{`C:\hermes\hermes.exe`, `HERMES_HOME=C:\Users\ann\.hermes\profiles\work`, "gateway", "run"}, `C:/Users/ann/.hermes/profiles/work`, true},
		{[]string{"hermes", "gateway", "run"}, workHome, false}, // HERMES_HOME in the environment only
		{[]string{"hermes", "-p", "coder", "gateway", "run"}, workHome, false},
		{[]string{"hermes", "HERMES_HOME=" + ruleHome, "gateway", "run"}, workHome, false},
		{[]string{"hermes", "-p", "workshop", "gateway", "run"}, workHome, true}, // Hermes' substring test: kept, never looser
		{[]string{"hermes", "-p", "coder", "gateway", "run"}, ruleHome, true},    // a root home: not this rule's
	} {
		if got := CommandLineBelongsToProfile(tt.argv, tt.home); got != tt.want {
			t.Errorf("CommandLineBelongsToProfile(%q, %s) = %v, want %v", tt.argv, tt.home, got, tt.want)
		}
	}
}
