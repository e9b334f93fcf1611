package service

import (
	"math/rand"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The packaged script's -StopTimeout check never takes a value run's
// --stop-timeout refuses: one Go parses to 0 (a fraction of a nanosecond,
// "0.5ns") or cannot parse at all (past 2562047h, "9999999999h") would
// otherwise pass the check, and the service be created, or a working one's
// command line replaced, with a stop timeout run refuses at every start,
// where the script promises that nothing was changed.
func TestPowershellStopTimeoutNeverTakesWhatRunRefuses(t *testing.T) {
	script, _ := packagedScript(t)
	_, rest, ok := strings.Cut(script, "$StopTimeout -cnotmatch '")
	p, _, _ := strings.Cut(rest, "'")
	if !ok {
		t.Fatal("the script has no -StopTimeout pattern")
	}
	duration, err := regexp.Compile(p)
	if err != nil {
		t.Fatalf("the script's pattern %q: %v", p, err)
	}
	if !strings.Contains(script, "$StopTimeout -notmatch '[1-9]'") {
		t.Fatal("the script no longer asks -StopTimeout for a digit other than 0")
	}
	nonzero := regexp.MustCompile(`[1-9]`)
	takes := func(v string) bool { return duration.MatchString(v) && nonzero.MatchString(v) }
	runs := func(v string) bool {
		d, err := time.ParseDuration(v)
		return err == nil && d > 0
	}
	for _, v := range []string{"0.5ns", "0.9ns", "0.0005us", "0.0000001ms", "0.0000000001s", "0.00000000000001m",
		"0.000000000000001h", "9999999999h", "2562048h", "153722868m", strings.Repeat("2562047h", 2),
		strings.Repeat("99999h", 30), "9223372036854775808ns"} {
		if takes(v) && !runs(v) {
			t.Errorf("-StopTimeout %q: the script takes it, run's --stop-timeout refuses it", v)
		}
	}
	// What an operator writes is still taken.
	for _, v := range []string{"90s", "75s", "1m15s", "2m30s", "1.5h", "0.5s", "10m", "1h0m0s", "500ms", "86400s"} {
		if !takes(v) || !runs(v) {
			t.Errorf("-StopTimeout %q: the script takes it: %v; run: %v", v, takes(v), runs(v))
		}
	}
	// And nothing else run refuses, among strings made of a duration's
	// characters.
	rnd := rand.New(rand.NewSource(1))
	const alphabet = "0123456789000009.nsumh"
	for range 200000 {
		b := make([]byte, 1+rnd.Intn(24))
		for i := range b {
			b[i] = alphabet[rnd.Intn(len(alphabet))]
		}
		if v := string(b); takes(v) && !runs(v) {
			t.Fatalf("-StopTimeout %q: the script takes it, run's --stop-timeout refuses it", v)
		}
	}

	// Checked before the script changes anything: Hermes' tasks (-Migrate),
	// the logon right, a service already installed.
	check := strings.Index(script, "-StopTimeout: '$StopTimeout'")
	for _, change := range []string{"schtasks /End", "Move-Item", "secedit /configure", "Stop-Service", "Invoke-CimMethod", "New-Service"} {
		if i := strings.Index(script, change); i < 0 || check < 0 || check > i {
			t.Errorf("the script checks -StopTimeout (at %d) after %s (at %d)", check, change, i)
		}
	}
}
