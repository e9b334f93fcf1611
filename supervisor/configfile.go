package supervisor

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"
)

// FileConfig is the optional JSON configuration file. Every field may be
// left out; flags and the environment override what it sets.
type FileConfig struct {
	Home         string      `json:"home,omitempty"`
	LockDir      string      `json:"lock_dir,omitempty"`
	Command      []string    `json:"command,omitempty"`
	Env          []string    `json:"env,omitempty"`
	StopTimeout  Duration    `json:"stop_timeout,omitempty"`
	ReadyTimeout Duration    `json:"ready_timeout,omitempty"`
	LogFormat    string      `json:"log_format,omitempty"`
	Restart      RestartFile `json:"restart,omitempty"`
	// Watchdog is the gateway's sd_notify keep-alive deadline ("0s": off),
	// overriding Hermes' gateway.systemd_watchdog_seconds.
	Watchdog string `json:"watchdog,omitempty"`
	// HangAfter is the heartbeat-file hang deadline (--hang-after).
	HangAfter Duration `json:"hang_after,omitempty"`
}

// RestartFile is the restart policy as written in the config file.
type RestartFile struct {
	InitialBackoff  Duration `json:"initial_backoff,omitempty"`
	MaxBackoff      Duration `json:"max_backoff,omitempty"`
	ResetAfter      Duration `json:"reset_after,omitempty"`
	Jitter          *float64 `json:"jitter,omitempty"`
	CrashLoopMax    int      `json:"crash_loop_max,omitempty"`
	CrashLoopWindow Duration `json:"crash_loop_window,omitempty"`
	MinUptime       Duration `json:"min_uptime,omitempty"`
}

// Duration is a time.Duration written as a Go duration string ("1m30s").
type Duration time.Duration

// UnmarshalJSON accepts a duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("durations are strings such as \"30s\", got %s", b)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	if v <= 0 {
		return fmt.Errorf("duration %q must be positive", s)
	}
	*d = Duration(v)
	return nil
}

// MarshalJSON writes the duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// ReadFileConfig reads a config file strictly: unknown keys are errors, so a
// typo never silently falls back to a default.
func ReadFileConfig(path string) (FileConfig, error) {
	var fc FileConfig
	b, err := os.ReadFile(path)
	if err != nil {
		return fc, fmt.Errorf("config file %s: %w", path, err)
	}
	fc, err = parseFileConfig(b)
	if err != nil {
		return fc, fmt.Errorf("config file %s: %w: fix it or pass --config to another file", path, err)
	}
	return fc, nil
}

func parseFileConfig(b []byte) (FileConfig, error) {
	var fc FileConfig
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&fc); err != nil {
		return fc, err
	}
	if err := dec.Decode(&struct{}{}); !errors.Is(err, io.EOF) {
		return fc, errors.New("trailing data after the JSON object")
	}
	return fc, nil
}

// FlagValues returns the file's settings keyed by the `run` flag they
// stand for, so that one precedence rule (flag, else file, else default)
// serves all of them.
func (fc FileConfig) FlagValues() map[string]string {
	m := map[string]string{}
	dur := func(name string, d Duration) {
		if d != 0 {
			m[name] = time.Duration(d).String()
		}
	}
	dur("stop-timeout", fc.StopTimeout)
	dur("ready-timeout", fc.ReadyTimeout)
	dur("hang-after", fc.HangAfter)
	if fc.Watchdog != "" {
		m["watchdog"] = fc.Watchdog
	}
	r := fc.Restart
	dur("initial-backoff", r.InitialBackoff)
	dur("max-backoff", r.MaxBackoff)
	dur("reset-after", r.ResetAfter)
	dur("crash-loop-window", r.CrashLoopWindow)
	dur("min-uptime", r.MinUptime)
	if r.Jitter != nil {
		m["jitter"] = strconv.FormatFloat(*r.Jitter, 'g', -1, 64)
	}
	if r.CrashLoopMax != 0 {
		m["crash-loop-max"] = strconv.Itoa(r.CrashLoopMax)
	}
	return m
}
