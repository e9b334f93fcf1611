package lockstore

// Hermes' command-line classifier (gateway/status.py of
// NousResearch/hermes-agent @ 00067189, from _gateway_command_subcommand
// to _record_looks_like_gateway), written to read like it. No I/O: the
// rules in hermesrules.go use it on command lines already read.

import (
	"strconv"
	"strings"

	"github.com/hermes-agent/hermes-supervisor/procstate/pyparse"
)

// GatewaySubcommand mirrors Hermes' _gateway_command_subcommand: it
// returns the gateway subcommand a command line runs ("run", "restart",
// "-v", ...), and false when the line is not a Hermes gateway command.
// Tokens are split quote-aware, unquoted, lower-cased, with `\` read as
// `/`; `-p X`, `--profile X`, `-p=X` and `--profile=X` are dropped
// anywhere, and a bare trailing `gateway` means `run`.
func GatewaySubcommand(cmdline string) (string, bool) {
	if cmdline == "" {
		return "", false
	}
	raw := shlexTokens(cmdline)
	tokens := make([]string, len(raw))
	basenames := make([]string, len(raw))
	for i, t := range raw {
		// str.lower(), not strings.ToLower: "--PROFİLE" is no profile
		// flag to Hermes, whose İ lowers to "i" and a combining dot.
		t = pyparse.Lower(strings.ReplaceAll(strings.Trim(t, `"'`), `\`, "/"))
		tokens[i] = t
		basenames[i] = t[strings.LastIndexByte(t, '/')+1:]
	}
	if len(tokens) == 0 {
		return "", false
	}
	// Gateway-dedicated entry points carry no subcommand.
	for _, t := range tokens {
		if t == "gateway/run.py" || strings.HasSuffix(t, "/gateway/run.py") {
			return "run", true
		}
	}
	for _, b := range basenames {
		if b == "hermes-gateway" || b == "hermes-gateway.exe" {
			return "run", true
		}
	}
	joined := strings.Join(tokens, " ")
	entry := strings.Contains(joined, "hermes_cli.main") || strings.Contains(joined, "hermes_cli/main.py")
	for _, b := range basenames {
		entry = entry || b == "hermes" || b == "hermes.exe"
	}
	if !entry {
		return "", false
	}
	// A profile selector consumes its value, even one named "gateway".
	var filtered []string
	skip := false
	for _, t := range tokens {
		switch {
		case skip:
			skip = false
		case t == "--profile" || t == "-p":
			skip = true
		case strings.HasPrefix(t, "--profile=") || strings.HasPrefix(t, "-p="):
		default:
			filtered = append(filtered, t)
		}
	}
	for i, t := range filtered {
		if t == "gateway" {
			if i+1 < len(filtered) {
				return filtered[i+1], true
			}
			return "run", true
		}
	}
	return "", false
}

// shlexTokens splits like Python's shlex.split(s, posix=False): a token
// that opens with a quote runs to the matching quote, quotes inside a word
// are plain characters, and an unclosed quote falls back to str.split(),
// as Hermes does on the ValueError. shlex's white space is four ASCII
// characters; str.split()'s is every character str.isspace() is true of
// (\x1c to \x1f and Unicode's spaces too).
func shlexTokens(s string) []string {
	space := func(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }
	var out []string
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case space(c):
			i++
		case c == '"' || c == '\'':
			j := strings.IndexByte(s[i+1:], c)
			if j < 0 {
				return pyparse.Split(s)
			}
			out = append(out, s[i:i+j+2])
			i += j + 2
		default:
			j := i
			for j < len(s) && !space(s[j]) {
				j++
			}
			out = append(out, s[i:j])
			i = j
		}
	}
	return out
}

// joinArgv is how Hermes sees a command line: argv joined with spaces,
// decoded as _read_process_cmdline decodes /proc/<pid>/cmdline, with
// errors="ignore", so a byte that is not UTF-8 drops out ("herm\xffes"
// reads "hermes"), then str.strip(), whose white space is Python's.
func joinArgv(argv []string) string {
	return strings.TrimFunc(strings.ToValidUTF8(strings.Join(argv, " "), ""), pyparse.IsSpace)
}

// IsGatewayRun mirrors looks_like_gateway_command_line: a gateway `run`.
// Hermes uses it for scoped locks.
func IsGatewayRun(argv []string) bool {
	sub, ok := GatewaySubcommand(joinArgv(argv))
	return ok && sub == "run"
}

// IsGatewayRuntime mirrors looks_like_gateway_runtime_command_line: `run`
// or `restart`, since a manual `hermes gateway restart` runs the gateway
// in-process. Hermes uses it for pid, lock and state records.
func IsGatewayRuntime(argv []string) bool {
	sub, ok := GatewaySubcommand(joinArgv(argv))
	return ok && (sub == "run" || sub == "restart")
}

// IsGatewayArgv reports whether argv can host a gateway: Hermes' runtime
// rule (IsGatewayRuntime), or our own demo gateway, whose argv carries
// the demo-gateway subcommand.
func IsGatewayArgv(argv []string) bool { return IsGatewayRuntime(argv) || isDemoGateway(argv) }

// isDemoGateway: the demo gateway is a command line the supervisor itself
// starts, so it counts as a gateway wherever it is judged.
func isDemoGateway(argv []string) bool { return len(argv) > 1 && argv[1] == "demo-gateway" }

// recordLooksLikeGateway mirrors _record_looks_like_gateway: the record
// says it is a gateway and its argv is a run-or-restart command line.
func (h hermesRecord) recordLooksLikeGateway() bool {
	if h.Kind != GatewayKind || !h.argvList {
		return false
	}
	sub, ok := GatewaySubcommand(h.argvLine)
	return ok && (sub == "run" || sub == "restart")
}

// quoteArgv names a command line in a reason.
func quoteArgv(argv []string) string {
	s := strings.Join(argv, " ")
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return strconv.Quote(s)
}

// CommandLineBelongsToProfile mirrors _command_line_belongs_to_profile
// (gateway/status.py @ 00067189): whether a gateway command line is the
// gateway of the named profile whose home is home. Hermes identifies a
// named profile's gateway by its argv, never its environment: the line,
// lower-cased, must name the profile with `-p <name>` or `--profile <name>`
// (the first such flag of str.split(), whatever white space lies between)
// or hold "hermes_home=<home>". Newer Hermes also reads "--profile=<name>"
// and "\" as "/", and older Hermes tested the flags as substrings: all
// count here too, so that a line any Hermes calls this profile's is this
// profile's (a record is kept, never swept, where any Hermes keeps it).
// It is Hermes' rule for named profiles only: home must be one
// (NamedProfile), else it reports true, leaving a root home's records to
// the rules that judged them before.
func CommandLineBelongsToProfile(argv []string, home string) bool {
	name, ok := NamedProfile(home)
	if !ok {
		return true
	}
	// str.lower() on both sides, then both sigmas as one: Python's choice
	// of the final one hangs on the letters around it, and on its Unicode
	// version (14.0 in 3.11, 16.0 in 3.14; pyparse lowers by 16.0's
	// capitals too), so folding them keeps every match Python makes (and
	// may make more, which keeps more).
	lower := func(s string) string {
		return strings.ReplaceAll(strings.ReplaceAll(pyparse.Lower(s), "ς", "σ"), `\`, "/")
	}
	line := lower(joinArgv(argv))
	if profileFlagValue(pyparse.Split(line)) == name {
		return true
	}
	for _, needle := range []string{"--profile " + name, "-p " + name, "hermes_home=" + lower(home), "--profile=" + name} {
		if strings.Contains(line, needle) {
			return true
		}
	}
	return false
}

// profileFlagValue mirrors Hermes' profile_flag_value: the value of the
// first `--profile=X`, or of the first `-p X` or `--profile X`, among
// tokens; "" when there is none.
func profileFlagValue(tokens []string) string {
	for i, t := range tokens {
		if v, ok := strings.CutPrefix(t, "--profile="); ok {
			return v
		}
		if (t == "-p" || t == "--profile") && i+1 < len(tokens) {
			return tokens[i+1]
		}
	}
	return ""
}
