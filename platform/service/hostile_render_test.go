//go:build !windows

package service

// Attack tests for the privileged files we render (issue 23, item 1): a
// home, lock dir, PATH, user or command word holding a newline became a
// directive of its own in a root-owned unit. Every definition is rendered
// with hostile values and parsed back by a parser of the format's own
// rules, written here apart from the renderer: each value must come back
// exactly, on the one line meant for it, or be refused with one line
// naming it and its source.

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/testdir"
	"howett.net/plist"
)

// unitLines splits a unit file into lines as systemd's read_line does: a
// line ends at \n, \r, \r\n or NUL. A line ending in a backslash continues
// on the next (systemd.syntax(7)); comments start with # or ;.
func unitLines(data []byte) ([]string, error) {
	var lines []string
	var cont strings.Builder
	for _, l := range strings.FieldsFunc(string(data), func(r rune) bool { return r == '\n' || r == '\r' || r == 0 }) {
		if t := strings.TrimSpace(l); cont.Len() == 0 && (t == "" || t[0] == '#' || t[0] == ';') {
			continue
		}
		if strings.HasSuffix(l, `\`) {
			cont.WriteString(strings.TrimSuffix(l, `\`) + " ")
			continue
		}
		cont.WriteString(l)
		lines = append(lines, cont.String())
		cont.Reset()
	}
	if cont.Len() > 0 {
		return nil, errors.New("the file ends inside a continued line")
	}
	return lines, nil
}

// unitDirectives parses a unit into section.key -> values, refusing what
// a unit of ours never holds: a key outside a section or a line with no =.
func unitDirectives(data []byte) (map[string][]string, error) {
	lines, err := unitLines(data)
	if err != nil {
		return nil, err
	}
	d := map[string][]string{}
	section := ""
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "[") && strings.HasSuffix(l, "]") {
			section = l[1 : len(l)-1]
			continue
		}
		k, v, ok := strings.Cut(l, "=")
		if !ok || section == "" {
			return nil, fmt.Errorf("line %q is no directive of a section", l)
		}
		key := section + "." + strings.TrimSpace(k)
		d[key] = append(d[key], strings.TrimSpace(v))
	}
	return d, nil
}

// unitWordsStrict splits a value into words as systemd's
// extract_first_word does with EXTRACT_UNQUOTE|EXTRACT_CUNESCAPE (the
// flags of ExecStart= and Environment=), then resolves specifiers (only
// %% is ever meant) and, in a command line's arguments, variables (only
// $$): the program's path is executed as it reads. A bare ; word
// (systemd's command separator) is an error.
func unitWordsStrict(s string, exec bool) ([]string, error) {
	var words []string
	i := 0
	for {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
			i++
		}
		if i == len(s) {
			return words, nil
		}
		if exec && s[i] == ';' && (i+1 == len(s) || s[i+1] == ' ' || s[i+1] == '\t') {
			return nil, errors.New("a bare ; separates a second command")
		}
		var w strings.Builder
		var quote byte
		for ; i < len(s); i++ {
			c := s[i]
			switch {
			case quote == 0 && (c == ' ' || c == '\t'):
				goto word
			case quote == 0 && (c == '"' || c == '\''):
				quote = c
			case quote != 0 && c == quote:
				quote = 0
			case c == '\\':
				r, n, err := cunescape(s[i+1:])
				if err != nil {
					return nil, err
				}
				w.WriteString(r)
				i += n
			default:
				w.WriteByte(c)
			}
		}
		if quote != 0 {
			return nil, errors.New("unbalanced quote")
		}
	word:
		out, err := expand(w.String(), '%')
		if err == nil && exec && len(words) > 0 {
			out, err = expand(out, '$')
		}
		if err != nil {
			return nil, err
		}
		words = append(words, out)
	}
}

// cunescape reads one C escape (after its backslash) as systemd does.
func cunescape(s string) (string, int, error) {
	if s == "" {
		return "", 0, errors.New("a trailing backslash")
	}
	if r, ok := map[byte]string{'a': "\a", 'b': "\b", 'f': "\f", 'n': "\n", 'r': "\r", 't': "\t", 'v': "\v",
		'\\': `\`, '"': `"`, '\'': "'", 's': " "}[s[0]]; ok {
		return r, 1, nil
	}
	hex := map[byte]int{'x': 2, 'u': 4, 'U': 8}[s[0]]
	if hex == 0 || len(s) < 1+hex {
		return "", 0, fmt.Errorf("unknown escape \\%c", s[0])
	}
	v, err := strconv.ParseUint(s[1:1+hex], 16, 32)
	if err != nil || v == 0 {
		return "", 0, fmt.Errorf("bad escape \\%s", s[:1+hex])
	}
	if s[0] == 'x' {
		return string([]byte{byte(v)}), 1 + hex, nil
	}
	if r := rune(v); !utf8.ValidRune(r) || noncharacter(r) {
		return "", 0, fmt.Errorf("escape \\%s is no character systemd takes (unichar_is_valid)", s[:1+hex])
	}
	return string(rune(v)), 1 + hex, nil
}

// expand resolves doubled marks (%% or $$) and refuses any other use.
func expand(s string, mark byte) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != mark {
			b.WriteByte(s[i])
			continue
		}
		if i+1 < len(s) && s[i+1] == mark {
			b.WriteByte(mark)
			i++
			continue
		}
		return "", fmt.Errorf("an unescaped %c in %q would be expanded", mark, s)
	}
	return b.String(), nil
}

// hostileWords are values any field might be given that a definition
// can hold: each must come back exactly.
var hostileWords = []string{
	`/h/100% $HOME ${HOME} %n %h`,
	`/h/"double" 'single' ;semi ; \back\slash\ \;`,
	`/h/a;b`,
	`/h/xml <tag> & "q" 'a' ]]> &amp;`,
	`/h/-leading/+plus/!bang/@at/:colon`,
	"/h/ünïcödé ‘typographic’ ‚quotes‛ ‟",
	`/h/ends with backslash\`,
	`/h/#hash =equals [section]`,
	"/h/" + strings.Repeat("long/", 800),
}

// hostileRunes are characters no definition may hold: controls, line
// breaks, bidirectional marks, bytes that are not UTF-8, and
// noncharacters, which systemd refuses raw and escaped alike (an
// Environment= line holding one is dropped) and which XML cannot carry.
var hostileRunes = []string{"\n", "\r", "\x00", "\t", "\x1b", "\x7f", "\u0085", "\u2028", "\u2029", "\u202e", "\u2066", "\xff",
	"\ufdd0", "\ufdef", "\ufffe", "\uffff", "\U0001fffe", "\U0010ffff"}

// noncharacter reports the 66 code points Unicode keeps out of
// interchange, which systemd's unichar_is_valid refuses.
func noncharacter(r rune) bool { return r >= 0xfdd0 && r <= 0xfdef || r&0xfffe == 0xfffe }

func hostileConfig(system bool) Config {
	c := ann(system)
	c.Origins = Origins{Home: Origin{From: "config file /home/ann/.hermes/hermes-supervisor.json, key \"home\"", Unseen: true}}
	return c
}

// checkUnit parses unit back and compares it with what c means: one
// directive per intended line, each value exactly.
func checkUnit(t *testing.T, c Config, unit []byte) {
	t.Helper()
	d, err := unitDirectives(unit)
	if err != nil {
		t.Fatalf("unit does not parse: %v\n%s", err, unit)
	}
	want := []string{"Install.WantedBy", "Service.Delegate", "Service.ExecReload", "Service.ExecStart", "Service.Environment", "Service.KillMode",
		"Service.NotifyAccess", "Service.Restart", "Service.RestartPreventExitStatus", "Service.RestartSec", "Service.TimeoutStartSec", "Service.TimeoutStopSec", "Service.Type",
		"Unit.Description", "Unit.Documentation", "Unit.StartLimitIntervalSec"}
	if c.System {
		want = append(want, "Unit.After", "Unit.Wants")
	}
	if c.User != "" {
		want = append(want, "Service.User")
	}
	var keys []string
	for k, v := range d {
		keys = append(keys, k)
		if n := len(v); n != 1 && k != "Service.Environment" {
			t.Errorf("%s appears %d times", k, n)
		}
	}
	slices.Sort(keys)
	slices.Sort(want)
	if !slices.Equal(keys, want) {
		t.Fatalf("directives %q, want %q\n%s", keys, want, unit)
	}
	argv, err := unitWordsStrict(d["Service.ExecStart"][0], true)
	if err != nil {
		t.Fatalf("ExecStart: %v", err)
	}
	if !slices.Equal(argv, runArgs(c)) {
		t.Errorf("ExecStart parses to %q, want %q", argv, runArgs(c))
	}
	if len(argv) == 0 || !strings.HasPrefix(argv[0], "/") {
		// systemd reads the prefixes from the unquoted first word.
		t.Errorf("ExecStart does not start with an absolute path, so systemd may read a prefix: %s", d["Service.ExecStart"][0])
	}
	var env []string
	for _, e := range d["Service.Environment"] {
		w, err := unitWordsStrict(e, false)
		if err != nil {
			t.Fatalf("Environment: %v", err)
		}
		env = append(env, w...)
	}
	if wantEnv := []string{"HERMES_HOME=" + c.Home, "PATH=" + c.Path}; !slices.Equal(env, wantEnv) {
		t.Errorf("Environment parses to %q, want %q", env, wantEnv)
	}
	if c.User != "" && d["Service.User"][0] != c.User {
		t.Errorf("User=%q, want %q", d["Service.User"][0], c.User)
	}
	if got := unitHome(unit); got != c.Home {
		t.Errorf("unitHome reads back %q, want %q", got, c.Home)
	}
}

// plistValues decodes a plist with the standard library's XML decoder,
// which, unlike a plist library, refuses characters XML 1.0 forbids.
func plistStrings(t *testing.T, data []byte) []string {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(data))
	dec.Strict = true
	var out []string
	var in bool
	for {
		tok, err := dec.Token()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return out
			}
			t.Fatalf("plist is not well-formed XML: %v\n%s", err, data)
		}
		switch tk := tok.(type) {
		case xml.StartElement:
			in = tk.Name.Local == "string"
			if in {
				out = append(out, "")
			}
		case xml.CharData:
			if in {
				out[len(out)-1] += string(tk)
			}
		case xml.EndElement:
			in = false
		}
	}
}

func checkPlist(t *testing.T, c Config, data []byte, python bool) {
	t.Helper()
	var a agent
	if _, err := plist.Unmarshal(data, &a); err != nil {
		t.Fatalf("plist does not parse: %v", err)
	}
	wantArgs := append(runArgs(agentTimeouts(c)), "--log-file", filepath.Join(Launchd{}.LogDir(c), "hermes-supervisor.log"))
	if !slices.Equal(a.ProgramArguments, wantArgs) {
		t.Errorf("ProgramArguments %q, want %q", a.ProgramArguments, wantArgs)
	}
	if a.EnvironmentVariables["HERMES_HOME"] != c.Home || a.EnvironmentVariables["PATH"] != c.Path || len(a.EnvironmentVariables) != 2 {
		t.Errorf("EnvironmentVariables %q", a.EnvironmentVariables)
	}
	strs := plistStrings(t, data)
	for _, v := range append(wantArgs, c.Home, c.Path) {
		if !slices.Contains(strs, v) {
			t.Errorf("the XML decoder does not find %q among the plist's strings", v)
		}
	}
	if py, err := exec.LookPath("python3"); err == nil && python {
		// Apple's format as Python's plistlib reads it, independent of
		// both Go decoders.
		cmd := exec.Command(py, "-c", `import plistlib, sys, json
p = plistlib.loads(sys.stdin.buffer.read())
json.dump([p["ProgramArguments"], p["EnvironmentVariables"]], sys.stdout)`)
		cmd.Stdin = bytes.NewReader(data)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("plistlib: %v", err)
		}
		want, _ := jsonMarshal([]any{wantArgs, map[string]string{"HERMES_HOME": c.Home, "PATH": c.Path}})
		if !jsonEqual(out, want) {
			t.Errorf("plistlib reads %s\nwant %s", out, want)
		}
	}
}

// psSingleQuoted decodes the PowerShell single-quoted strings of an array
// literal @('a', 'b”c') by PowerShell's tokenizer rules: a string ends at
// any single quote (', U+2018 to U+201B) that is not doubled, and between
// strings only ", " may stand.
func psSingleQuoted(s string) ([]string, error) {
	var out []string
	for s != "" {
		r, n := utf8.DecodeRuneInString(s)
		if !psSingleQuote(r) {
			return nil, fmt.Errorf("%q: not a single-quoted string", s)
		}
		s = s[n:]
		var b strings.Builder
		for {
			if s == "" {
				return nil, errors.New("unterminated string")
			}
			r, n := utf8.DecodeRuneInString(s)
			s = s[n:]
			if psSingleQuote(r) {
				r2, n2 := utf8.DecodeRuneInString(s)
				if s == "" || !psSingleQuote(r2) {
					break
				}
				s = s[n2:]
				r = r2
			}
			if r < ' ' || r == 0x7f {
				return nil, fmt.Errorf("a control character %U inside a string", r)
			}
			b.WriteRune(r)
		}
		out = append(out, b.String())
		if s != "" {
			var ok bool
			if s, ok = strings.CutPrefix(s, ", "); !ok {
				return nil, fmt.Errorf("%q after a string", s)
			}
		}
	}
	return out, nil
}

// TestRenderHostileValues renders every definition with each hostile
// value in each field that takes one, and parses it back.
func TestRenderHostileValues(t *testing.T) {
	for _, v := range hostileWords {
		for _, system := range []bool{false, true} {
			for field, set := range map[string]func(*Config){
				"home":     func(c *Config) { c.Home = v },
				"lock dir": func(c *Config) { c.LockDir = v },
				"config":   func(c *Config) { c.ConfigFile = v },
				"PATH":     func(c *Config) { c.Path = "/usr/bin:" + strings.ReplaceAll(v, ":", "") + ":/bin" },
				"binary":   func(c *Config) { c.Exe = v },
			} {
				c := hostileConfig(system)
				set(&c)
				name := fmt.Sprintf("%s=%.30q/system=%v", field, v, system)
				unit, err := Systemd{}.Unit(c)
				switch {
				case field == "binary" && strings.ContainsAny(v, `"'\`):
					// systemd's string_is_safe refuses the program path.
					if !errors.Is(err, ErrUnsafeValue) {
						t.Errorf("%s: Unit took a program path systemd refuses: %v", name, err)
					}
				case err != nil:
					t.Errorf("%s: Unit refused a value a unit can hold: %v", name, err)
					continue
				default:
					t.Run(name+"/unit", func(t *testing.T) { checkUnit(t, c, unit) })
				}
				data, err := Launchd{}.Plist(c)
				if err != nil {
					t.Errorf("%s: Plist refused a value a plist can hold: %v", name, err)
					continue
				}
				t.Run(name+"/plist", func(t *testing.T) { checkPlist(t, c, data, field == "home" && system) })
			}
		}
		c := hostileConfig(true)
		// Without %: the Windows service manager expands %NAME% on the
		// command line (TestWindowsRefusesPercent).
		w := strings.ReplaceAll(v, "%", "")
		c.Home, c.LockDir, c.ConfigFile, c.Command = w, w, w, []string{`C:\hermes\hermes.exe`, w, "'" + w + "'", "-" + w, "+x", "@y", "!z"}
		script, err := powershellInstall(c, hermesWindowsHome)
		if err != nil {
			t.Errorf("%.30q: the PowerShell script refused a value it can hold: %v", v, err)
			continue
		}
		_, rest, _ := strings.Cut(string(script), "$argv = @('--home', $HermesHome) + $configArgs + @(")
		array, _, ok := strings.Cut(rest, ") + $stopArgs + @('--control-user'")
		if !ok {
			t.Fatalf("no argument array in the script:\n%s", script)
		}
		// The script pins the stop timeout only from its -StopTimeout.
		unpinned := c
		unpinned.StopTimeout = 0
		got, err := psSingleQuoted(array)
		if want := scmArgs(unpinned, ""); err != nil || !slices.Equal(got, want) {
			t.Errorf("%.30q: the script's arguments read back as %q (%v), want %q", v, got, err, want)
		}
	}
}

// TestRenderRefusesControls gives each field each character no definition
// may hold: every renderer and every Install refuses it with
// ErrUnsafeValue, in one line that names the value's source, and plans
// nothing.
func TestRenderRefusesControls(t *testing.T) {
	none := func(string) ([]string, error) { return nil, nil }
	for _, bad := range hostileRunes {
		for field, set := range map[string]func(*Config, string){
			"home":      func(c *Config, v string) { c.Home = v },
			"lock dir":  func(c *Config, v string) { c.LockDir = v },
			"config":    func(c *Config, v string) { c.ConfigFile = v },
			"PATH":      func(c *Config, v string) { c.Path = "/usr/bin:" + v },
			"user":      func(c *Config, v string) { c.User = v },
			"binary":    func(c *Config, v string) { c.Exe = v },
			"user home": func(c *Config, v string) { c.UserHome = v },
			"command":   func(c *Config, v string) { c.Command = []string{"/usr/bin/hermes", v} },
		} {
			for _, system := range []bool{false, true} {
				c := hostileConfig(system)
				src := "config file /home/ann/.hermes/hermes-supervisor.json"
				c.Origins = Origins{Home: Origin{From: src}, LockDir: Origin{From: src}, Path: Origin{From: src}, User: Origin{From: src},
					Exe: Origin{From: src}, UserHome: Origin{From: src}, Command: Origin{From: src}, ConfigFile: Origin{From: src}}
				// The attack of issue 23: a directive smuggled after the value.
				set(&c, "/home/ann/h"+bad+"ExecStartPre=+/home/ann/pwn.sh")
				name := fmt.Sprintf("%s %q system=%v", field, bad, system)
				check := func(what string, err error) {
					t.Helper()
					if !errors.Is(err, ErrUnsafeValue) {
						t.Errorf("%s: %s: %v, want ErrUnsafeValue", name, what, err)
						return
					}
					if msg := err.Error(); strings.ContainsAny(msg, "\n\r\x00") || !strings.Contains(msg, src) {
						t.Errorf("%s: %s: error %q must be one line naming %s", name, what, msg, src)
					}
				}
				_, err := Systemd{}.Unit(c)
				check("Unit", err)
				_, err = Launchd{}.Plist(c)
				check("Plist", err)
				p, err := Systemd{Glob: none}.Install(c, false)
				check("systemd Install", err)
				if len(p.Steps) != 0 {
					t.Errorf("%s: a refused install still plans %d steps", name, len(p.Steps))
				}
				p, err = Launchd{Glob: none}.Install(c, false)
				check("launchd Install", err)
				if len(p.Steps) != 0 {
					t.Errorf("%s: a refused install still plans %d steps", name, len(p.Steps))
				}
			}
		}
		if _, err := psQuote("a"+bad+"b", "a word", Origin{From: "a test"}); !errors.Is(err, ErrUnsafeValue) {
			t.Errorf("psQuote(%q): %v, want ErrUnsafeValue", bad, err)
		}
	}
}

// TestUnitPrefixAndUser checks what quoting cannot keep out: systemd reads
// the prefixes + ! @ - : after unquoting the first word, so a binary path
// must start with /; User= takes no quotes, so only a plain name is
// written.
func TestUnitPrefixAndUser(t *testing.T) {
	for _, exe := range []string{"+/bin/sh", "!/bin/sh", "@/bin/sh", "-/bin/sh", ":/bin/sh", `"+/bin/sh"`, "sh"} {
		c := hostileConfig(true)
		c.Exe = exe
		if _, err := (Systemd{}).Unit(c); !errors.Is(err, ErrUnsafeValue) {
			t.Errorf("Unit with the binary %q: %v, want ErrUnsafeValue", exe, err)
		}
	}
	for _, u := range []string{"ann root", "%u", "-ann", `"root"`, "ann;root", "ann=root"} {
		c := hostileConfig(true)
		c.User = u
		if _, err := (Systemd{}).Unit(c); !errors.Is(err, ErrUnsafeValue) {
			t.Errorf("Unit with User %q: %v, want ErrUnsafeValue", u, err)
		}
	}
}

// TestNoteOrigins checks that install shows, before it acts, every value
// the installing user did not type (under sudo: their config file, their
// login's PATH).
func TestNoteOrigins(t *testing.T) {
	c := hostileConfig(true)
	c.Home = "/home/ann/elsewhere"
	c.Origins.Path = Origin{From: "ann's login shell", Unseen: true}
	p, err := Systemd{Glob: func(string) ([]string, error) { return nil, nil }}.Install(c, false)
	if err != nil {
		t.Fatal(err)
	}
	notes := strings.Join(p.Notes, "\n")
	for _, want := range []string{`Hermes home "/home/ann/elsewhere" comes from config file /home/ann/.hermes/hermes-supervisor.json, key "home"`,
		`PATH "` + c.Path + `" comes from ann's login shell`} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
	if strings.Contains(notes, "lock dir") {
		t.Errorf("a value the user typed is noted:\n%s", notes)
	}
}

// TestSystemdAnalyzeHostile has systemd's own parser load units rendered
// with hostile values: it must take them without a warning.
func TestSystemdAnalyzeHostile(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed (.ci/run installs it)")
	}
	exe, err := exec.LookPath("true")
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range hostileWords {
		c := hostileConfig(true)
		c.Exe, c.User, c.Home, c.LockDir = exe, "", v, v
		dir := testdir.New(t)
		if len(v) < 200 && !strings.ContainsAny(v, `"'\`) {
			// The binary at the hostile path too: verify checks that the
			// program ExecStart names exists and is executable.
			c.Exe = filepath.Join(dir, v, "hermes-supervisor")
			if err := os.MkdirAll(filepath.Dir(c.Exe), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(exe, c.Exe); err != nil {
				t.Fatal(err)
			}
		}
		path := filepath.Join(dir, fmt.Sprintf("hostile%d.service", i))
		if err := os.WriteFile(path, mustUnit(t, c), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(analyze, "verify", "--man=no", path).CombinedOutput()
		if err != nil || len(bytes.TrimSpace(out)) != 0 {
			t.Errorf("systemd-analyze verify of a unit with %.40q: %v\n%s", v, err, out)
		}
	}
}

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }

func jsonEqual(a, b []byte) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}

// TestSystemdQuoteKeepsOneLine is the renderer's own defence, should a
// control character ever get past checkValues: a quoted word is one line
// that systemd reads back as the very word, or refuses (NUL and the
// noncharacters, which no unit can carry).
func TestSystemdQuoteKeepsOneLine(t *testing.T) {
	for _, bad := range hostileRunes {
		in := "/home/ann/h" + bad + "ExecStartPre=+/home/ann/pwn.sh"
		for _, exec := range []bool{true, false} {
			q := systemdQuote(in, exec)
			if strings.ContainsAny(q, "\n\r\x00\u0085\u2028\u2029") {
				t.Errorf("systemdQuote(%q) = %q: a line break in the unit", in, q)
				continue
			}
			words, err := unitWordsStrict(q, exec)
			if err == nil && !slices.Equal(words, []string{in}) {
				t.Errorf("systemdQuote(%q) = %q reads back as %q", in, q, words)
			}
			if r, _ := utf8.DecodeRuneInString(bad); err != nil && bad != "\x00" && !noncharacter(r) {
				t.Errorf("systemdQuote(%q) = %q does not read back: %v", in, q, err)
			}
		}
	}
}

// TestWindowsRefusesPercent gives each value of the Windows service's
// command line a %NAME%: the service manager would start the supervisor
// with the variable's value in its place (seen under Wine: a home
// C:\h %WINDIR% x became C:\h C:\windows x), and nothing escapes a % in
// that line, so both the install and the packaged script refuse it in one
// line naming the value's source.
func TestWindowsRefusesPercent(t *testing.T) {
	const src = "config file C:\\Users\\ann\\.hermes\\hermes-supervisor.json"
	for field, set := range map[string]func(*Config){
		"binary":   func(c *Config) { c.Exe = `C:\%WINDIR%\hermes-supervisor.exe` },
		"home":     func(c *Config) { c.Home = `C:\hermes %WINDIR% x` },
		"lock dir": func(c *Config) { c.LockDir = `C:\locks\100%` },
		"config":   func(c *Config) { c.ConfigFile = `C:\conf\%USERNAME%.json` },
		"command":  func(c *Config) { c.Command = []string{`C:\hermes\hermes.exe`, "%TEMP%"} },
	} {
		c := hostileConfig(true)
		c.Origins = Origins{Exe: Origin{From: src}, Home: Origin{From: src}, LockDir: Origin{From: src}, Command: Origin{From: src}, ConfigFile: Origin{From: src}}
		set(&c)
		for what, err := range map[string]error{"checkCommandLine": c.checkCommandLine(), "the PowerShell script": func() error { _, err := powershellInstall(c, hermesWindowsHome); return err }()} {
			if !errors.Is(err, ErrUnsafeValue) || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), src) {
				t.Errorf("%s with a %% in the %s: %v, want ErrUnsafeValue in one line naming %s", what, field, err, src)
			}
		}
	}
	c := hostileConfig(true)
	c.Home, c.Path = `C:\Users\ann\hermes`, `C:\%SystemRoot%\bin`
	if err := c.checkCommandLine(); err != nil {
		t.Errorf("a %% in the PATH, which goes into the service's environment and is not expanded, was refused: %v", err)
	}
}
