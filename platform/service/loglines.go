package service

import (
	"encoding/json"
	"os"
	"strings"
)

// explainingLines returns up to n lines of the supervisor's log at path
// for an error that says why the service is not running: its last warning
// and error lines first in weight, which say what to do (a home held by
// another gateway, a bad config), topped up with the latest other lines,
// all in the log's order. The last n lines alone are often routine ones
// (a sweep of the lock dir logs one line per file) that hide the one that
// matters. Empty when the log cannot be read.
func explainingLines(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil || n <= 0 {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	keep := make([]bool, len(lines))
	picked := 0
	for i := len(lines) - 1; i >= 0 && picked < n; i-- {
		if notable(lines[i]) {
			keep[i], picked = true, picked+1
		}
	}
	for i := len(lines) - 1; i >= 0 && picked < n; i-- {
		if !keep[i] {
			keep[i], picked = true, picked+1
		}
	}
	var out []string
	for i, l := range lines {
		if keep[i] {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// notable reports whether a log line, in either of the supervisor's
// formats (console: time, LEVEL, message, tab-separated; json: a "level"
// field), is a warning or worse.
func notable(line string) bool {
	var level string
	if strings.HasPrefix(line, "{") {
		var rec struct {
			Level string `json:"level"`
		}
		if json.Unmarshal([]byte(line), &rec) != nil {
			return false
		}
		level = rec.Level
	} else if f := strings.SplitN(line, "\t", 3); len(f) == 3 {
		level = f[1]
	}
	switch strings.ToLower(level) {
	case "warn", "error", "dpanic", "panic", "fatal":
		return true
	}
	return false
}
