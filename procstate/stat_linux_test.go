package procstate

import "testing"

func TestParseStat(t *testing.T) {
	rest := " 1 1 1 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 881234 1000 10"
	tests := []struct {
		name    string
		line    string
		start   int64
		zombie  bool
		stopped bool
		bad     bool
	}{
		{"plain", "4242 (python3) S" + rest, 881234, false, false, false},
		{"comm with spaces and parens", "4242 (my (odd) name) R" + rest, 881234, false, false, false},
		{"zombie", "4242 (hermes) Z" + rest, 881234, true, false, false},
		{"stopped", "4242 (hermes) T" + rest, 881234, false, true, false},
		{"traced", "4242 (hermes) t" + rest, 881234, false, true, false},
		{"short", "4242 (hermes) S 1 2", 0, false, false, true},
		{"no paren", "4242 hermes S" + rest, 0, false, false, true},
		{"bad start", "4242 (x) S 1 1 1 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 soon 1", 0, false, false, true},
		{"empty", "", 0, false, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, err := parseStat(4242, []byte(tt.line))
			if tt.bad {
				if err == nil {
					t.Fatalf("accepted %q", tt.line)
				}
				return
			}
			if err != nil || *st.start != tt.start || st.zombie != tt.zombie || st.stopped != tt.stopped {
				t.Fatalf("got %+v (start %v), %v", st, st.start, err)
			}
		})
	}
}

// TestKernelThread covers a live process whose command line is empty:
// only the record's own argv can decide.
func TestKernelThread(t *testing.T) {
	p := NewProber(Options{})
	kthreadd, err := p.Inspect(t.Context(), 2)
	if err != nil || len(kthreadd.Argv) != 0 {
		t.Skipf("no kthreadd with an empty command line in this pid namespace: %v", err)
	}
	notGateway := Identity{PID: 2, Argv: []string{"sleep"}}
	if v := p.Judge(t.Context(), notGateway, isGateway).Verdict; v != Reused {
		t.Fatalf("unreadable cmdline, null start, non-gateway record: %s", v)
	}
	gw := Identity{PID: 2, StartTime: kthreadd.StartTime, Argv: []string{"x", "demo-gateway"}}
	if v := p.Judge(t.Context(), gw, isGateway).Verdict; v != Alive {
		t.Fatalf("unreadable cmdline, matching start: %s", v)
	}
}

func BenchmarkParseStat(b *testing.B) {
	line := []byte("4242 (python3) S 1 1 1 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 881234 1000 10")
	b.ReportAllocs()
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		if _, err := parseStat(4242, line); err != nil {
			b.Fatal(err)
		}
	}
}
