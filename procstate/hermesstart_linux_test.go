package procstate

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The expected values below were produced by Python 3.11.7:
// int(line.split()[21]) of each stat line for TestHermesStart (an
// exception: Hermes falls back to psutil), and
// int(round((float(ticks)/clk + float(btime))*100)), psutil's create time
// as Hermes rounds it, for TestEpochCenti.

func TestHermesStart(t *testing.T) {
	rest := " 1 1 1 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 7 881234 1000 10 18446744073709551615 4194304 5 6"
	tests := []struct {
		name    string
		want    int64
		fails   bool
		notUTF8 bool
	}{
		{"hermes", 881234, false, false},
		{"my hermes", 7, false, false},
		{"a\x1cb", 7, false, false}, // str.split() splits on \x1c-\x1f; bytes.Fields does not
		{"a\x1cb\x1cc\x1cd", 0, false, false},
		{"x\u0085y", 7, false, false},
		{"x\u00a0y", 7, false, false},
		{"x\u2003y", 7, false, false},
		{"x\x1fy z", 1, false, false},
		{"a b c d e f g h i j k l m n o p q r s t", 0, true, false}, // ValueError
		{"herm\xffes", 0, true, true},                               // UnicodeDecodeError
		{"python\xc3\xa9\xc3", 0, true, true},                       // a character cut at 15 bytes
		{"\xed\xa0\x80", 0, true, true},                             // a surrogate: invalid in Python's UTF-8 too
		{"h\u00e9rmes", 881234, false, false},
	}
	for _, tt := range tests {
		line := "4242 (" + tt.name + ") S" + rest
		st, err := parseStat(4242, []byte(line))
		if err != nil {
			t.Fatalf("%q: %v", tt.name, err)
		}
		if *st.start != 881234 {
			t.Errorf("%q: true start %d", tt.name, *st.start)
		}
		naive := *st.start
		if st.naiveStart != nil {
			naive = *st.naiveStart
		}
		if st.hermesFails != tt.fails || st.nameNotUTF8 != tt.notUTF8 || (!tt.fails && naive != tt.want) {
			t.Errorf("%q: Hermes reads %d (fails %v, not UTF-8 %v); Python gives %d (fails %v, not UTF-8 %v)",
				tt.name, naive, st.hermesFails, st.nameNotUTF8, tt.want, tt.fails, tt.notUTF8)
		}
	}
}

func TestEpochCenti(t *testing.T) {
	for _, tt := range []struct{ ticks, clk, btime, want int64 }{
		{0, 100, 1700000000, 170000000000},
		{1, 100, 1700000000, 170000000001},
		{881234, 100, 1767000000, 176700881234},
		{12345678, 100, 1767225600, 176734905678},
		{5, 1024, 1767000000, 176700000000},
		{1023, 1024, 1767000000, 176700000100},
		{3, 250, 1700000001, 170000000101},
		{99999999999, 100, 1767000000, 276699999999},
		{7, 3, 1767000000, 176700000233},
		{17, 6, 1767000000, 176700000283},
		{3622576170, 100, 1657457472, 169368323370},
		{9898832823, 100, 1727123379, 182611170723},
		{1098152995, 100, 1682114669, 169309619895},
		{6720496857, 100, 1625810206, 169301517457},
		{9124192650, 100, 1784328534, 187557046050},
		{9436622826, 100, 1767766780, 186213300826},
		{128, 1024, 1767000000, 176700000012}, // .5: halves to even
		{384, 1024, 1767000000, 176700000038},
		{123456789012345, 100, 1767000000, 123633489012345},
		{9007199254740992, 100, 1767000000, 9007375954740992},
		{100000000000000001, 100, 1767000000, 100000176700000000}, // float64 loses the 1, as Python does
	} {
		if got, ok := epochCenti(tt.ticks, tt.clk, tt.btime); !ok || got != tt.want {
			t.Errorf("epochCenti(%d, %d, %d) = %d, %v; Python gives %d", tt.ticks, tt.clk, tt.btime, got, ok, tt.want)
		}
	}
	if _, ok := epochCenti(1<<62, 1, 1767000000); ok {
		t.Error("a value beyond int64 was accepted")
	}
}

// TestHermesStartOfRealProcesses runs processes under names Hermes reads
// in each way and checks what Look says Hermes records against what
// Hermes' own function, run by python3, records (testdata/hermes_start.py),
// and that the other start times still count as the same start.
func TestHermesStartOfRealProcesses(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed")
	}
	script, err := filepath.Abs(filepath.Join("testdata", "hermes_start.py"))
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	p := NewProber(Options{StartTolerance: -1})
	for _, tt := range []struct {
		name     string
		fallback bool
	}{
		{"hermes", false},
		{"my hermes", false},
		{"a\x1cb", false},
		{"herm\xffes", true},
		{"python\u00e9\u00e9\u00e9\u00e9\u00e9", true}, // cut to 15 bytes: half an é
	} {
		link := filepath.Join(dir, tt.name)
		if err := os.Symlink(self, link); err != nil {
			t.Fatal(err)
		}
		cmd, _ := startPath(t, link)
		l, err := p.Look(t.Context(), cmd.Process.Pid)
		if err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(py, script, strconv.Itoa(cmd.Process.Pid)).Output()
		if err != nil {
			t.Fatalf("%s: %v", script, err)
		}
		f := strings.Fields(string(out))
		if len(f) != 3 {
			t.Fatalf("%s printed %q", script, out)
		}
		want, _ := strconv.ParseInt(f[1], 10, 64)
		if got := *l.HermesStartTime(); got != want || (f[0] == "fallback") != tt.fallback || (l.EpochStartTime != nil) != tt.fallback {
			t.Errorf("%q: Look says Hermes records %d (epoch %v), Hermes' function: %s", tt.name, got, l.EpochStartTime != nil, out)
		}
		if l.NameNotUTF8 != (f[2] == "raises") {
			t.Errorf("%q: NameNotUTF8 %v, but Hermes' read of /proc/<pid>/status %s", tt.name, l.NameNotUTF8, f[2])
		}
		for _, rec := range []int64{want, *l.StartTime} {
			if !StartTimesEqual(&rec, l, time.Now()) {
				t.Errorf("%q: recorded %d is not the same start as %+v", tt.name, rec, l)
			}
		}
		if other := want + 1; !StartTimesConflict(&other, l, time.Now()) {
			t.Errorf("%q: recorded %d does not conflict", tt.name, other)
		}
		// The older judge takes the same start times.
		if v := p.Judge(t.Context(), Identity{PID: cmd.Process.Pid, StartTime: &want}, nil).Verdict; v != Alive {
			t.Errorf("%q: Judge of Hermes' own record says %s", tt.name, v)
		}
	}
}
