package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/hermes-agent/hermes-supervisor/platform/safefs"

	"github.com/hermes-agent/hermes-supervisor/supervisor"
)

// fileConfig is the optional JSON configuration file. Every field may be
// left out; flags and the environment override what it sets.
type fileConfig struct {
	Home        string              `json:"home,omitempty"`
	LockDir     string              `json:"lock_dir,omitempty"`
	Command     []string            `json:"command,omitempty"`
	Env         []string            `json:"env,omitempty"`
	StopTimeout supervisor.Duration `json:"stop_timeout,omitempty"`
	// MaxStopExtension caps what EXTEND_TIMEOUT_USEC adds to a stop
	// (--max-stop-extension).
	MaxStopExtension supervisor.Duration `json:"max_stop_extension,omitempty"`
	ReadyTimeout     supervisor.Duration `json:"ready_timeout,omitempty"`
	LogFormat        string              `json:"log_format,omitempty"`
	Restart          restartFile         `json:"restart,omitempty"`
	// Watchdog is the gateway's sd_notify keep-alive deadline ("0s": off),
	// overriding Hermes' gateway.systemd_watchdog_seconds.
	Watchdog string `json:"watchdog,omitempty"`
	// HangAfter is the heartbeat-file hang deadline (--hang-after).
	HangAfter supervisor.Duration `json:"hang_after,omitempty"`
	// LogRateLimitBurst and LogRateLimitInterval limit the gateway's
	// output (--log-rate-limit-burst, --log-rate-limit-interval); a burst
	// of 0 turns the limit off.
	LogRateLimitBurst    *int                `json:"log_rate_limit_burst,omitempty"`
	LogRateLimitInterval supervisor.Duration `json:"log_rate_limit_interval,omitempty"`
	// Path is the file this was read from (set by readFileConfig, never
	// by the file itself): install names it as the source of a value.
	Path string `json:"-"`
	// at is where each key's value stands in the file, by dotted key: a
	// value refused for what another says is named by its line there.
	at map[string]place
}

// place is a 1-based line and column in the config file.
type place struct{ line, col int }

// restartFile is the restart policy as written in the config file.
type restartFile struct {
	InitialBackoff  supervisor.Duration `json:"initial_backoff,omitempty"`
	MaxBackoff      supervisor.Duration `json:"max_backoff,omitempty"`
	ResetAfter      supervisor.Duration `json:"reset_after,omitempty"`
	Jitter          *float64            `json:"jitter,omitempty"`
	CrashLoopMax    int                 `json:"crash_loop_max,omitempty"`
	CrashLoopWindow supervisor.Duration `json:"crash_loop_window,omitempty"`
	MinUptime       supervisor.Duration `json:"min_uptime,omitempty"`
	HandoverGrace   supervisor.Duration `json:"handover_grace,omitempty"`
}

// maxConfigFile bounds the config file we read.
const maxConfigFile = 1 << 20

// configError reports a config file that cannot be used: the file, the key
// (dotted, "restart.jitter"; empty for a syntax error) and where it stands.
type configError struct {
	Path      string
	Key       string
	Line, Col int // 1-based; 0 when no place applies
	Msg       string
}

func (e *configError) Error() string {
	var b strings.Builder
	b.WriteString("config file ")
	b.WriteString(e.Path)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d:%d", e.Line, e.Col)
	}
	if e.Key != "" {
		fmt.Fprintf(&b, ": %q", e.Key)
	}
	fmt.Fprintf(&b, ": %s: fix it, or pass --config another file", e.Msg)
	return b.String()
}

// readFileConfig reads a config file strictly: unknown keys are errors, so a
// typo never silently falls back to a default, and every value is checked
// here, where its file, key and line can still be named (*configError). A
// symlink, FIFO, device or file over 1 MiB is refused (see
// safefs.ReadRegularFile).
func readFileConfig(path string) (fileConfig, error) {
	var fc fileConfig
	b, err := safefs.ReadRegularFile(path, maxConfigFile)
	if err != nil {
		return fc, fmt.Errorf("config file %s: %w: point --config at a regular file of at most 1 MiB", path, err)
	}
	fc, err = parseFileConfig(b)
	var ce *configError
	if errors.As(err, &ce) {
		ce.Path = path
	}
	if err == nil {
		fc.Path = path
	}
	return fc, err
}

func parseFileConfig(b []byte) (fileConfig, error) {
	var fc fileConfig
	p := &configParser{src: b, at: map[string]place{}}
	dec := json.NewDecoder(bytes.NewReader(b))
	err := p.object(dec, 0, "", map[string]fieldFunc{
		"home":                    p.into(&fc.Home, nil),
		"lock_dir":                p.into(&fc.LockDir, nil),
		"command":                 p.into(&fc.Command, checkCommand(&fc.Command)),
		"env":                     p.into(&fc.Env, checkEnv(&fc.Env)),
		"stop_timeout":            p.into(&fc.StopTimeout, nil),
		"ready_timeout":           p.into(&fc.ReadyTimeout, nil),
		"max_stop_extension":      p.into(&fc.MaxStopExtension, nil),
		"hang_after":              p.into(&fc.HangAfter, nil),
		"log_rate_limit_interval": p.into(&fc.LogRateLimitInterval, nil),
		"log_rate_limit_burst": p.into(&fc.LogRateLimitBurst, func() error {
			if *fc.LogRateLimitBurst < 0 {
				return fmt.Errorf("must be at least 0 (0 turns the limit off), got %d", *fc.LogRateLimitBurst)
			}
			return nil
		}),
		"watchdog": p.into(&fc.Watchdog, func() error {
			if d, err := time.ParseDuration(fc.Watchdog); err != nil || d < 0 {
				return fmt.Errorf("%q is not a deadline: use a duration such as \"60s\", or \"0\" to turn hang detection off", fc.Watchdog)
			}
			return nil
		}),
		"log_format": p.into(&fc.LogFormat, func() error {
			if fc.LogFormat != "console" && fc.LogFormat != "json" {
				return fmt.Errorf("%q is not a log format: use \"console\" or \"json\"", fc.LogFormat)
			}
			return nil
		}),
		"restart": func(raw []byte, off int, key string) error {
			r := &fc.Restart
			return p.object(json.NewDecoder(bytes.NewReader(raw)), off, key+".", map[string]fieldFunc{
				"initial_backoff":   p.into(&r.InitialBackoff, nil),
				"max_backoff":       p.into(&r.MaxBackoff, nil),
				"reset_after":       p.into(&r.ResetAfter, nil),
				"crash_loop_window": p.into(&r.CrashLoopWindow, nil),
				"min_uptime":        p.into(&r.MinUptime, nil),
				"handover_grace":    p.into(&r.HandoverGrace, nil),
				"jitter": p.into(&r.Jitter, func() error {
					if r.Jitter != nil && (*r.Jitter < 0 || *r.Jitter >= 1) {
						return fmt.Errorf("must be at least 0 and below 1 (0.2 is ±20%%), got %g", *r.Jitter)
					}
					return nil
				}),
				"crash_loop_max": p.into(&r.CrashLoopMax, func() error {
					if r.CrashLoopMax < 1 {
						return fmt.Errorf("must be at least 1, got %d", r.CrashLoopMax)
					}
					return nil
				}),
			})
		},
	})
	if err != nil {
		return fileConfig{}, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fileConfig{}, p.errAt(int(dec.InputOffset()), "", "trailing data after the JSON object")
	}
	fc.at = p.at
	return fc, nil
}

func checkCommand(c *[]string) func() error {
	return func() error {
		if len(*c) > 0 && (*c)[0] == "" {
			return errors.New("the first word must name the program to run")
		}
		return nil
	}
}

func checkEnv(env *[]string) func() error {
	return func() error {
		for _, kv := range *env {
			if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
				return fmt.Errorf("%q is not NAME=VALUE", kv)
			}
		}
		return nil
	}
}

// fieldFunc decodes the raw value of key, found at byte offset off.
type fieldFunc func(raw []byte, off int, key string) error

// configParser walks the file key by key, so that every error can name
// the key and the line and column of its value.
type configParser struct {
	src []byte
	at  map[string]place
}

// position turns a byte offset into a 1-based line and column.
func (p *configParser) position(off int) (line, col int) {
	off = min(max(off, 0), len(p.src))
	before := p.src[:off]
	line = bytes.Count(before, []byte{'\n'}) + 1
	col = off - bytes.LastIndexByte(before, '\n')
	return line, col
}

func (p *configParser) errAt(off int, key, msg string) *configError {
	line, col := p.position(off)
	return &configError{Key: key, Line: line, Col: col, Msg: msg}
}

// skip returns the offset of the next byte that is not white space or one
// of extra.
func (p *configParser) skip(off int, extra string) int {
	for off < len(p.src) && (strings.IndexByte(" \t\r\n", p.src[off]) >= 0 || strings.IndexByte(extra, p.src[off]) >= 0) {
		off++
	}
	return off
}

// object reads one JSON object from dec, whose input starts at offset base
// of the file, and hands each value to its field.
func (p *configParser) object(dec *json.Decoder, base int, prefix string, fields map[string]fieldFunc) error {
	tok, err := dec.Token()
	switch {
	case errors.Is(err, io.EOF):
		return p.errAt(base, "", "the file is empty: write a JSON object, {} at least")
	case err != nil:
		return p.syntax(err, base+int(dec.InputOffset()), prefix)
	case tok != json.Delim('{'):
		return p.errAt(base, strings.TrimSuffix(prefix, "."), "expected a JSON object {…}")
	}
	for dec.More() {
		keyOff := p.skip(base+int(dec.InputOffset()), ",")
		tok, err := dec.Token()
		if err != nil {
			return p.syntax(err, base+int(dec.InputOffset()), prefix)
		}
		name, _ := tok.(string)
		key := prefix + name
		f, ok := fields[name]
		if !ok {
			return p.errAt(keyOff, key, "unknown key: see the config file section of the README")
		}
		valOff := p.skip(base+int(dec.InputOffset()), ":")
		line, col := p.position(valOff)
		p.at[key] = place{line, col}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return p.syntax(err, base+int(dec.InputOffset()), prefix)
		}
		if err := f(raw, valOff, key); err != nil {
			var ce *configError
			if errors.As(err, &ce) {
				return ce
			}
			return p.errAt(valOff, key, err.Error())
		}
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return p.syntax(err, base+int(dec.InputOffset()), prefix)
	}
	return nil
}

func (p *configParser) syntax(err error, off int, prefix string) error {
	// The decoder's offsets count from wherever it was reading; a scan of
	// the whole file finds the first bad byte exactly.
	var se *json.SyntaxError
	if errors.As(json.Unmarshal(p.src, new(any)), &se) {
		if int(se.Offset) >= len(p.src) {
			return p.errAt(len(p.src), strings.TrimSuffix(prefix, "."), "invalid JSON: the file ends before the object is closed")
		}
		// Offset counts the bytes read, the bad one included.
		return p.errAt(int(se.Offset)-1, "", "invalid JSON: "+se.Error())
	}
	return p.errAt(off, strings.TrimSuffix(prefix, "."), "invalid JSON: "+err.Error())
}

// into decodes a value into dst, describes a wrong type in JSON's words,
// then runs check.
func (p *configParser) into(dst any, check func() error) fieldFunc {
	return func(raw []byte, _ int, _ string) error {
		if err := json.Unmarshal(raw, dst); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) {
				return fmt.Errorf("expected %s, got %s", jsonKind(te.Type), article(te.Value))
			}
			return err
		}
		if check != nil {
			return check()
		}
		return nil
	}
}

// jsonKind names what a Go type looks like in JSON.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Slice:
		return "a list of " + strings.TrimPrefix(strings.TrimPrefix(jsonKind(t.Elem()), "a "), "an ") + "s"
	case reflect.Int, reflect.Int64:
		return "a whole number"
	case reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.Pointer:
		return jsonKind(t.Elem())
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return "a " + t.Kind().String()
}

func article(v string) string {
	switch {
	case v == "":
		return "something else"
	case strings.IndexByte("aeiou", v[0]) >= 0:
		return "an " + v
	}
	return "a " + v
}

// FlagValues returns the file's settings keyed by the `run` flag they
// stand for, so that one precedence rule (flag, else file, else default)
// serves all of them.
func (fc fileConfig) FlagValues() map[string]string {
	m := map[string]string{}
	dur := func(name string, d supervisor.Duration) {
		if d != 0 {
			m[name] = time.Duration(d).String()
		}
	}
	dur("stop-timeout", fc.StopTimeout)
	dur("max-stop-extension", fc.MaxStopExtension)
	dur("ready-timeout", fc.ReadyTimeout)
	dur("hang-after", fc.HangAfter)
	dur("log-rate-limit-interval", fc.LogRateLimitInterval)
	if fc.LogRateLimitBurst != nil {
		m["log-rate-limit-burst"] = strconv.Itoa(*fc.LogRateLimitBurst)
	}
	if fc.Watchdog != "" {
		m["watchdog"] = fc.Watchdog
	}
	r := fc.Restart
	dur("initial-backoff", r.InitialBackoff)
	dur("max-backoff", r.MaxBackoff)
	dur("reset-after", r.ResetAfter)
	dur("crash-loop-window", r.CrashLoopWindow)
	dur("min-uptime", r.MinUptime)
	dur("handover-grace", r.HandoverGrace)
	if r.Jitter != nil {
		m["jitter"] = strconv.FormatFloat(*r.Jitter, 'g', -1, 64)
	}
	if r.CrashLoopMax != 0 {
		m["crash-loop-max"] = strconv.Itoa(r.CrashLoopMax)
	}
	return m
}
