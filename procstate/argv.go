package procstate

import (
	"path"
	"slices"
	"strings"
)

// ArgvMatches reports whether a live command line could be the process that
// recorded argv. Hermes records Python's sys.argv, which drops the
// interpreter and its options: a console script `hermes gateway run` runs as
// `python3 /usr/bin/hermes gateway run`, and `python -m hermes_cli.main
// gateway run` records the module's file as argv[0]. So the recorded argv
// matches when it equals the live one, is its tail, or its tail after
// argv[0] follows a live token that names the same program or module.
func ArgvMatches(recorded, live []string) bool {
	if len(recorded) == 0 || len(live) < len(recorded) {
		return false
	}
	if slices.Equal(recorded, live[len(live)-len(recorded):]) {
		return true
	}
	rest := recorded[1:]
	head := live[:len(live)-len(rest)]
	if !slices.Equal(rest, live[len(head):]) {
		return false
	}
	prog := normalizePath(recorded[0])
	for i, tok := range head {
		t := normalizePath(tok)
		if t == prog || (path.Base(t) == path.Base(prog) && path.Base(t) != "") {
			return true
		}
		if i > 0 && head[i-1] == "-m" && moduleFile(prog, tok) {
			return true
		}
	}
	return false
}

// moduleFile reports whether file is the source Python runs for `-m mod`.
func moduleFile(file, mod string) bool {
	p := strings.ReplaceAll(mod, ".", "/")
	return strings.HasSuffix(file, "/"+p+".py") || strings.HasSuffix(file, "/"+p+"/__main__.py") ||
		file == p+".py" || file == p+"/__main__.py"
}

func normalizePath(s string) string { return strings.ReplaceAll(s, `\`, "/") }
