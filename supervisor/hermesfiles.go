package supervisor

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/hermes-agent/hermes-supervisor/platform/safefs"
)

// maxHermesConfig bounds the read of <home>/config.yaml; real ones are a
// few kilobytes.
const maxHermesConfig = 1 << 20

func hermesConfigPath(home string) string { return filepath.Join(home, "config.yaml") }

// readHermesWatchdog reads gateway.systemd_watchdog_seconds, and nothing
// else, from Hermes' config.yaml at path, with the stamp of the file it
// read (zero when it read none). Hermes reads the value as a number of
// seconds and treats anything not positive as off; so do we.
func readHermesWatchdog(path string) (time.Duration, safefs.FileStamp, error) {
	b, st, err := safefs.ReadRegular(path, maxHermesConfig+1)
	if err != nil {
		return 0, safefs.FileStamp{}, fmt.Errorf("read %s: %w", path, err)
	}
	if len(b) > maxHermesConfig {
		return 0, st, fmt.Errorf("%s is larger than %d bytes", path, maxHermesConfig)
	}
	var doc struct {
		Gateway struct {
			Watchdog yaml.Node `yaml:"systemd_watchdog_seconds"`
		} `yaml:"gateway"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return 0, st, fmt.Errorf("%s: %w", path, err)
	}
	n := doc.Gateway.Watchdog
	if n.Kind == 0 || n.Tag == "!!null" {
		return 0, st, nil
	}
	if n.Kind != yaml.ScalarNode {
		return 0, st, fmt.Errorf("%s: gateway.systemd_watchdog_seconds is not a number", path)
	}
	secs, err := strconv.ParseFloat(strings.TrimSpace(n.Value), 64)
	if err != nil || math.IsNaN(secs) || math.IsInf(secs, 0) {
		return 0, st, fmt.Errorf("%s: gateway.systemd_watchdog_seconds %q is not a number", path, truncate(n.Value, 24))
	}
	if secs <= 0 {
		return 0, st, nil
	}
	return time.Duration(min(secs, 365*24*3600) * float64(time.Second)), st, nil
}

// hermesConfigSettled is how long config.yaml must have been left alone,
// when it is read, for what it said to be kept until its stamp changes: a
// second write in the same tick of the file system's clock, of the same
// size, would leave the stamp as it was ("racy git").
const hermesConfigSettled = 2 * time.Second

// hermesConfigCache keeps what config.yaml said while its stamp (device,
// inode, size, modification time) stays the same. Hermes seeds the file
// from an example of over 100 KB, mostly comments: parsing one that size
// took about 2 ms, on every restart's way to the next start. A stat now
// stands in for it.
type hermesConfigCache struct {
	stamp    safefs.FileStamp
	watchdog time.Duration
	err      error
	kept     bool
}

// watchdogOf is readHermesWatchdog of home's config.yaml through the
// cache; now is the time of the read, for hermesConfigSettled.
func (c *hermesConfigCache) watchdogOf(home string, now time.Time) (time.Duration, error) {
	path := hermesConfigPath(home)
	if c.kept {
		if st, err := safefs.Stamp(path); err == nil && st.Same(c.stamp) {
			return c.watchdog, c.err
		}
	}
	d, st, err := readHermesWatchdog(path)
	c.stamp, c.watchdog, c.err = st, d, err
	// A file that could not be read is looked for again each time.
	read := !st.ModTime().IsZero()
	c.kept = read && now.Sub(st.ModTime()) >= hermesConfigSettled
	return d, err
}

// maxHeartbeat bounds the read of state/gateway.heartbeat.
const maxHeartbeat = 64 << 10

// heartbeat is Hermes' state/gateway.heartbeat, written every 30 s by a
// gateway thread that checks its event loop.
type heartbeat struct {
	PID       int
	UpdatedAt time.Time
}

func heartbeatPath(home string) string { return filepath.Join(home, "state", "gateway.heartbeat") }

// readHeartbeat reads the heartbeat file. updated_at is an epoch number
// or an ISO 8601 time, as Hermes versions differ.
func readHeartbeat(home string) (heartbeat, error) {
	var hb heartbeat
	b, _, err := safefs.ReadRegular(heartbeatPath(home), maxHeartbeat+1)
	if err != nil {
		return hb, err
	}
	if len(b) > maxHeartbeat {
		return hb, errors.New("heartbeat file too large")
	}
	var raw struct {
		PID       json.Number     `json:"pid"`
		UpdatedAt json.RawMessage `json:"updated_at"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return hb, fmt.Errorf("heartbeat: %w", err)
	}
	pid, err := strconv.Atoi(raw.PID.String())
	if err != nil || pid <= 0 {
		return hb, errors.New("heartbeat: no pid")
	}
	hb.PID = pid
	var num float64
	var str string
	switch {
	case json.Unmarshal(raw.UpdatedAt, &num) == nil && num > 0 && !math.IsInf(num, 0):
		sec, frac := math.Modf(num)
		hb.UpdatedAt = time.Unix(int64(sec), int64(frac*1e9))
	case json.Unmarshal(raw.UpdatedAt, &str) == nil:
		if f, err := strconv.ParseFloat(str, 64); err == nil && f > 0 && !math.IsInf(f, 0) {
			sec, frac := math.Modf(f)
			hb.UpdatedAt = time.Unix(int64(sec), int64(frac*1e9))
			break
		}
		t, err := time.Parse(time.RFC3339Nano, str)
		if err != nil {
			t, err = time.ParseInLocation("2006-01-02T15:04:05.999999", str, time.Local)
		}
		if err != nil {
			return hb, fmt.Errorf("heartbeat: updated_at %q is not a time", truncate(str, 40))
		}
		hb.UpdatedAt = t
	default:
		return hb, errors.New("heartbeat: no updated_at")
	}
	return hb, nil
}
