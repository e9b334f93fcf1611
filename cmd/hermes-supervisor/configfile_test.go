package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/hermes-agent/hermes-supervisor/internal/testkit/testdir"
)

func TestReadFileConfigErrors(t *testing.T) {
	cases := []struct {
		name, src, want string
	}{
		{"unknown key", "{\n  \"stop_timout\": \"10s\"\n}", `:2:3: "stop_timout": unknown key: see the config file section of the README`},
		{"unknown nested key", `{"restart": {"jiter": 0.1}}`, `:1:14: "restart.jiter": unknown key`},
		{"cut short", "{\n  \"home\": \"/h\",\n", `:3:1: invalid JSON: the file ends before the object is closed`},
		{"bad character", "{\n  \"home\": x\n}", `:2:11: invalid JSON: invalid character 'x' looking for beginning of value`},
		{"wrong type", "{\"command\": \"hermes gateway run\"}", `:1:13: "command": expected a list of strings, got a string`},
		{"wrong nested type", `{"restart": {"crash_loop_max": "ten"}}`, `:1:32: "restart.crash_loop_max": expected a whole number, got a string`},
		{"duration as number", `{"stop_timeout": 75}`, `:1:18: "stop_timeout": durations are strings such as "30s", got 75`},
		{"negative stop extension", `{"max_stop_extension": "-1m"}`, `:1:24: "max_stop_extension": duration "-1m" must be positive`},
		{"jitter out of range", "{\"restart\": {\n  \"jitter\": 7}}", `:2:13: "restart.jitter": must be at least 0 and below 1`},
		{"crash loop max zero", `{"restart": {"crash_loop_max": 0}}`, `"restart.crash_loop_max": must be at least 1, got 0`},
		{"log format", `{"log_format": "xml"}`, `:1:16: "log_format": "xml" is not a log format: use "console" or "json"`},
		{"negative rate limit burst", `{"log_rate_limit_burst": -1}`, `:1:26: "log_rate_limit_burst": must be at least 0 (0 turns the limit off), got -1`},
		{"rate limit interval as number", `{"log_rate_limit_interval": 30}`, `"log_rate_limit_interval": durations are strings such as "30s", got 30`},
		{"env", `{"env": ["NOEQUALS"]}`, `"env": "NOEQUALS" is not NAME=VALUE`},
		{"not an object", `[1]`, `:1:1: expected a JSON object`},
		{"trailing", `{} {}`, `: trailing data after the JSON object`},
		{"empty", ``, `: the file is empty`},
	}
	dir := testdir.New(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, "hermes-supervisor.json")
			if err := os.WriteFile(path, []byte(c.src), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := readFileConfig(path)
			want := "config file " + path
			if err == nil || len(err.Error()) < len(want) || err.Error()[:len(want)] != want || !contains(err.Error(), c.want) {
				t.Fatalf("got %v\nwant %s…%s", err, want, c.want)
			}
		})
	}
}

func TestReadFileConfigValid(t *testing.T) {
	src := `{"home": "/h", "command": ["hermes", "gateway", "run"], "env": ["A=B"], "stop_timeout": "5s", "max_stop_extension": "10m",
	"log_format": "json", "log_rate_limit_burst": 0, "log_rate_limit_interval": "1m", "restart": {"jitter": 0, "crash_loop_max": 3, "max_backoff": "10s"}}`
	fc, err := parseFileConfig([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if fc.FlagValues()["max-stop-extension"] != "10m0s" {
		t.Fatalf("max_stop_extension: flag values %v", fc.FlagValues())
	}
	if v := fc.FlagValues(); v["log-rate-limit-burst"] != "0" || v["log-rate-limit-interval"] != "1m0s" {
		t.Fatalf("log rate limit: flag values %v", v)
	}
	if fc.Home != "/h" || len(fc.Command) != 3 || fc.LogFormat != "json" || fc.Restart.Jitter == nil || *fc.Restart.Jitter != 0 || fc.Restart.CrashLoopMax != 3 {
		t.Fatalf("parsed %+v", fc)
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// FuzzParseFileConfig holds the config parser to never panicking, and to
// reading back what it accepted with the same meaning.
func FuzzParseFileConfig(f *testing.F) {
	for _, seed := range []string{
		`{"home": "/home/ann/.hermes", "command": ["hermes", "gateway", "run"], "stop_timeout": "75s", "restart": {"initial_backoff": "1s", "jitter": 0.2, "crash_loop_max": 10}}`,
		`{"restart": {"jitter": -1}}`, `{"stop_timeout": 5}`, `{"unknown": 1}`, `{} {}`, ``, `{"env": ["A=B"]}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fc, err := parseFileConfig(data)
		if err != nil {
			return
		}
		vals := fc.FlagValues()
		b, err := json.Marshal(fc)
		if err != nil {
			t.Fatal(err)
		}
		again, err := parseFileConfig(b)
		if err != nil {
			t.Fatalf("cannot read back %s (from %q): %v", b, data, err)
		}
		if got := again.FlagValues(); !reflect.DeepEqual(got, vals) {
			t.Fatalf("read back %s as %v, want %v", b, got, vals)
		}
	})
}
