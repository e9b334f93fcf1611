package service

import (
	"bufio"
	"bytes"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"howett.net/plist"
)

// Hermes installs one service definition per profile (systemd unit,
// launchd agent, Scheduled Task), each for one Hermes home. `--migrate`
// must disable only those of the home being installed: another profile's
// gateway is not ours to stop. These functions read which home a
// definition serves, from what Hermes writes into it.

// profileName is Hermes' profile name rule.
var profileName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// servedHome is the home a Hermes gateway runs for, given the HERMES_HOME
// its definition sets (empty when none), the --profile/-p it passes (empty
// when none) and the default root (~/.hermes of the user it runs as).
func servedHome(env, profile, defaultRoot string) (string, bool) {
	switch {
	case env != "":
		return env, true
	case profile == "" || profile == "default":
		return defaultRoot, defaultRoot != ""
	case profileName.MatchString(profile) && defaultRoot != "":
		return filepath.Join(defaultRoot, "profiles", profile), true
	}
	return "", false
}

// profileArg returns the value of --profile X, -p X, --profile=X or -p=X
// in argv.
func profileArg(argv []string) string {
	for i, a := range argv {
		switch {
		case (a == "--profile" || a == "-p") && i+1 < len(argv):
			return argv[i+1]
		case strings.HasPrefix(a, "--profile="):
			return strings.TrimPrefix(a, "--profile=")
		case strings.HasPrefix(a, "-p="):
			return strings.TrimPrefix(a, "-p=")
		}
	}
	return ""
}

// hermesUnitHome reads the home a Hermes systemd unit serves: its
// Environment=HERMES_HOME=..., else the profile in ExecStart.
func hermesUnitHome(unit []byte, defaultRoot string) (string, bool) {
	var env, profile string
	sc := bufio.NewScanner(bytes.NewReader(unit))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if v, ok := strings.CutPrefix(line, "Environment="); ok {
			for _, kv := range unitWords(v) {
				if h, ok := strings.CutPrefix(kv, "HERMES_HOME="); ok {
					env = strings.ReplaceAll(h, "%%", "%")
				}
			}
		}
		if v, ok := strings.CutPrefix(line, "ExecStart="); ok {
			profile = profileArg(unitWords(v))
		}
	}
	return servedHome(env, profile, defaultRoot)
}

// unitWords splits a unit value into words, double quotes grouping.
func unitWords(s string) []string {
	var out []string
	var cur strings.Builder
	quoted, in := false, false
	for _, r := range s {
		switch {
		case r == '"':
			quoted, in = !quoted, true
		case (r == ' ' || r == '\t') && !quoted:
			if in {
				out = append(out, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if in {
		out = append(out, cur.String())
	}
	return out
}

// agentHome reads the home a Hermes launchd agent serves: its
// EnvironmentVariables HERMES_HOME, else the profile in ProgramArguments.
func agentHome(data []byte, defaultRoot string) (string, bool) {
	var p struct {
		EnvironmentVariables map[string]string `plist:"EnvironmentVariables"`
		ProgramArguments     []string          `plist:"ProgramArguments"`
	}
	if _, err := plist.Unmarshal(data, &p); err != nil {
		return "", false
	}
	return servedHome(p.EnvironmentVariables["HERMES_HOME"], profileArg(p.ProgramArguments), defaultRoot)
}

// launcherHome reads the HERMES_HOME a Hermes Windows launcher sets: the
// .cmd wrapper (set "HERMES_HOME=..."), the .vbs (env.Item("HERMES_HOME")
// = "...") or the .js (env("HERMES_HOME") = "...";).
var launcherHomeRE = regexp.MustCompile(`(?m)(?:set "HERMES_HOME=([^"\r\n]*)"|env(?:\.Item)?\("HERMES_HOME"\) = "((?:[^"\\\r\n]|\\.|"")*)")`)

func launcherHome(script []byte) (string, bool) {
	m := launcherHomeRE.FindSubmatch(script)
	switch {
	case m == nil:
		return "", false
	case len(m[1]) > 0:
		return string(m[1]), true
	}
	v := string(m[2])
	if bytes.Contains(m[0], []byte(".Item(")) {
		v = strings.ReplaceAll(v, `""`, `"`) // VBScript
	} else {
		v = strings.NewReplacer(`\\`, `\`, `\"`, `"`).Replace(v) // JScript
	}
	return v, v != ""
}

// sameHomePath compares two homes as paths: cleaned, and without regard
// to case for Windows paths (a drive letter), whose file system ignores it.
func sameHomePath(a, b string) bool {
	a, b = filepath.Clean(a), filepath.Clean(b)
	if a == b {
		return true
	}
	windowsPath := func(p string) bool { return len(p) > 2 && p[1] == ':' }
	norm := func(p string) string { return strings.ReplaceAll(p, "/", `\`) }
	return windowsPath(a) && windowsPath(b) && strings.EqualFold(norm(a), norm(b))
}

// ownedDefinitions splits Hermes' definitions (paths) into those that
// serve home and those that serve another (or that cannot be read, which
// are never touched), reading each with read and home with served.
func ownedDefinitions(paths []string, home string, read func(string) ([]byte, error), served func([]byte) (string, bool)) (ours, others []string) {
	if read == nil {
		read = readDefinition
	}
	for _, p := range paths {
		b, err := read(p)
		if err != nil {
			others = append(others, p)
			continue
		}
		if h, ok := served(b); ok && sameHomePath(h, home) {
			ours = append(ours, p)
		} else {
			others = append(others, p)
		}
	}
	return ours, others
}

// hermesWindowsLaunchers finds Hermes' Windows autostarts for home: the
// Scheduled Tasks (Hermes_Gateway[_suffix]) whose launcher Hermes keeps in
// <home>\gateway-service and which sets this HERMES_HOME, and the
// Startup-folder entries (in startup) that launch one of them.
func hermesWindowsLaunchers(home, startup string, glob func(string) ([]string, error), read func(string) ([]byte, error)) (tasks, entries []string) {
	if read == nil {
		read = readDefinition
	}
	dir := filepath.Join(home, "gateway-service")
	// How a Startup entry names the launcher: a Windows path, whatever
	// OS this runs on (the tests read fixtures on Linux).
	winDir := strings.TrimRight(home, `\/`) + `\gateway-service\`
	seen := map[string]bool{}
	var launchers []string
	for _, ext := range []string{".vbs", ".js", ".cmd"} {
		launchers = append(launchers, globSorted(glob, filepath.Join(dir, "Hermes_Gateway*"+ext))...)
	}
	ours, _ := ownedDefinitions(launchers, home, read, launcherHome)
	for _, l := range ours {
		name := strings.TrimSuffix(filepath.Base(l), filepath.Ext(l))
		if !seen[name] {
			seen[name] = true
			tasks = append(tasks, name)
		}
	}
	for _, ext := range []string{".vbs", ".js", ".cmd"} {
		for _, e := range globSorted(glob, filepath.Join(startup, "Hermes_Gateway*"+ext)) {
			b, err := read(e)
			if err == nil && startsLauncherIn(ext, b, winDir) {
				entries = append(entries, e)
			}
		}
	}
	return tasks, entries
}

// startsLauncherIn reports whether a Startup-folder script names a file in
// dir (a Windows path ending in a backslash, compared without regard to
// case). A JScript entry, which Hermes writes where VBScript is absent,
// holds the path as a string literal with every backslash doubled: it is
// compared as JScript reads its literals, and only them, so a path in a
// comment starts nothing.
func startsLauncherIn(ext string, script []byte, dir string) bool {
	dir = strings.ToLower(dir)
	if ext != ".js" {
		return strings.Contains(strings.ToLower(string(script)), dir)
	}
	for _, lit := range jsStringLiterals(string(script)) {
		if strings.Contains(strings.ToLower(lit), dir) {
			return true
		}
	}
	return false
}

// jsStringLiterals returns the values of the single- and double-quoted
// string literals of a JScript source, escapes undone as JScript undoes
// them, skipping comments. An unterminated literal ends at the line's end.
func jsStringLiterals(src string) []string {
	var out []string
	for i := 0; i < len(src); i++ {
		switch c := src[i]; {
		case strings.HasPrefix(src[i:], "//"):
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case strings.HasPrefix(src[i:], "/*"):
			end := strings.Index(src[i+2:], "*/")
			if end < 0 {
				return out
			}
			i += end + 3
		case c == '"' || c == '\'':
			var b strings.Builder
			for i++; i < len(src) && src[i] != c && src[i] != '\n'; i++ {
				if src[i] != '\\' || i+1 >= len(src) {
					b.WriteByte(src[i])
					continue
				}
				i++
				switch e := src[i]; e {
				case 'n':
					b.WriteByte('\n')
				case 't':
					b.WriteByte('\t')
				case 'r':
					b.WriteByte('\r')
				case '\n':
					// a line continuation
				case 'x', 'u':
					n := 2
					if e == 'u' {
						n = 4
					}
					if v, err := strconv.ParseUint(src[i+1:min(i+1+n, len(src))], 16, 32); err == nil && i+n < len(src) {
						b.WriteRune(rune(v))
						i += n
					} else {
						b.WriteByte(e)
					}
				default:
					b.WriteByte(e) // \\, \", \' and any other: the character itself
				}
			}
			out = append(out, b.String())
		}
	}
	return out
}
