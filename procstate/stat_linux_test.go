package procstate

import (
	"testing"
	"time"
)

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

// Hermes splits the stat line on whitespace: with a space in comm its
// 22nd field is another one, and that is what it records.
func TestNaiveStartAndCompare(t *testing.T) {
	rest := " 1 1 1 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 7 881234 1000 10"
	tests := []struct {
		line     string
		naive    *int64
		recorded int64
		same     bool
	}{
		{"4242 (hermes) S" + rest, nil, 881234, true},
		{"4242 (hermes) S" + rest, nil, 881235, false},
		{"4242 (my hermes) S" + rest, ptr(7), 7, true},
		{"4242 (my hermes) S" + rest, ptr(7), 881234, true},
		{"4242 (my hermes) S" + rest, ptr(7), 8, false},
		{"4242 (a b c d e f g h i j k l m n o p q r s t) S" + rest, nil, 881234, true}, // Hermes' split fails: it records psutil's epoch time; the true field still counts (stricter)
	}
	for _, tt := range tests {
		st, err := parseStat(4242, []byte(tt.line))
		if err != nil {
			t.Fatal(err)
		}
		if (st.naiveStart == nil) != (tt.naive == nil) || (tt.naive != nil && *st.naiveStart != *tt.naive) {
			t.Errorf("%q: naive start %v, want %v", tt.line, st.naiveStart, tt.naive)
		}
		l := Live{StartTime: st.start, NaiveStartTime: st.naiveStart}
		if got := StartTimesEqual(&tt.recorded, l, time.Now()); got != tt.same || StartTimesConflict(&tt.recorded, l, time.Now()) == got {
			t.Errorf("%q: recorded %d same=%v, want %v", tt.line, tt.recorded, got, tt.same)
		}
	}
}

func ptr(v int64) *int64 { return &v }
