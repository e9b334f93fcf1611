// Package lockstore reads, writes, judges and sweeps the Hermes gateway's
// pid, lock, state and marker files.
package lockstore

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hermes-agent/hermes-supervisor/platform/safefs"
	"github.com/hermes-agent/hermes-supervisor/platform/termtext"
	"github.com/hermes-agent/hermes-supervisor/procstate"
)

// GatewayKind is the "kind" Hermes writes into every gateway record.
const GatewayKind = "hermes-gateway"

// MaxRecordSize bounds the reads of a record the supervisor acts on by
// itself (its own gateway's pid file, a release): a larger file is
// corrupt there, never slurped. The judge reads more (maxReadable).
const MaxRecordSize = 64 << 10

// maxReadable bounds the judge's reads. A live gateway's record holds its
// argv, which Linux allows up to 6 MiB (3/4 of the 8 MiB stack limit) and
// json.dump's \uXXXX escapes can make six times larger: a record that
// size is judged as Hermes judges it, never moved aside for its size. A
// larger file is kept unjudged (see rules.unreadable).
const maxReadable = 40 << 20

// Layout names every file of one Hermes home and its lock directory.
type Layout struct{ Home, LockDir string }

// The names of the home's files that Hermes or we write.
const (
	pidFileName         = "gateway.pid"
	runtimeLockName     = "gateway.lock"
	stateFileName       = "gateway_state.json"
	plannedStopName     = ".gateway-planned-stop.json"
	takeoverName        = ".gateway-takeover.json"
	supervisorStateName = "hermes-supervisor.state.json"
)

// PIDFile returns <home>/gateway.pid.
func (l Layout) PIDFile() string { return filepath.Join(l.Home, pidFileName) }

// RuntimeLock returns <home>/gateway.lock.
func (l Layout) RuntimeLock() string { return filepath.Join(l.Home, runtimeLockName) }

// StateFile returns <home>/gateway_state.json.
func (l Layout) StateFile() string { return filepath.Join(l.Home, stateFileName) }

// PlannedStopMarker returns <home>/.gateway-planned-stop.json.
func (l Layout) PlannedStopMarker() string { return filepath.Join(l.Home, plannedStopName) }

// TakeoverMarker returns <home>/.gateway-takeover.json.
func (l Layout) TakeoverMarker() string { return filepath.Join(l.Home, takeoverName) }

// SupervisorState returns <home>/hermes-supervisor.state.json.
func (l Layout) SupervisorState() string { return filepath.Join(l.Home, supervisorStateName) }

// SupervisorLock returns <home>/hermes-supervisor.lock.
func (l Layout) SupervisorLock() string { return filepath.Join(l.Home, "hermes-supervisor.lock") }

// ScopedLock returns <lockdir>/<scope>-<sha256(identity)[:16]>.lock.
func (l Layout) ScopedLock(scope, identity string) string {
	return filepath.Join(l.LockDir, scope+"-"+IdentityHash(identity)+".lock")
}

// IdentityHash is the 16-hex-digit hash Hermes names scoped locks by.
func IdentityHash(identity string) string {
	sum := sha256.Sum256([]byte(identity))
	return hex.EncodeToString(sum[:])[:16]
}

// Record is a Hermes pid record as written to gateway.pid, gateway.lock and
// scoped lock files.
type Record struct {
	PID          int             `json:"pid"`
	Kind         string          `json:"kind,omitempty"`
	Argv         []string        `json:"argv,omitempty"`
	StartTime    *int64          `json:"start_time"`
	HermesHome   string          `json:"hermes_home,omitempty"`
	Scope        string          `json:"scope,omitempty"`
	IdentityHash string          `json:"identity_hash,omitempty"`
	Metadata     json.RawMessage `json:"metadata,omitempty"`
	UpdatedAt    string          `json:"updated_at,omitempty"`
	Profile      string          `json:"profile,omitempty"`
	// Legacy marks a record parsed from a bare integer.
	Legacy bool `json:"-"`
}

// Identity returns the record's process identity.
func (r Record) Identity() procstate.Identity {
	return procstate.Identity{PID: r.PID, StartTime: r.StartTime, Argv: r.Argv}
}

// NewRecord builds the record a gateway with identity id in home writes.
func NewRecord(id procstate.Identity, home string) Record {
	return Record{PID: id.PID, Kind: GatewayKind, Argv: id.Argv, StartTime: id.StartTime, HermesHome: home}
}

// ErrEmpty reports an empty (or all-whitespace) record file.
var ErrEmpty = errors.New("file is empty")

// CorruptError reports a record that cannot be parsed.
type CorruptError struct {
	Reason string
	// tooLarge: larger than maxReadable, so never judged; pythonOnly:
	// Python's json.loads may read it (NaN, Infinity) where Go's cannot;
	// hermesRaises: Hermes' reader raises on it (nested deeper than
	// maxNesting) and removes nothing. Each may be a record Hermes keeps,
	// so the judge keeps it too.
	tooLarge, pythonOnly, hermesRaises bool
}

func (e *CorruptError) Error() string { return "corrupt record: " + e.Reason }

// FileError is a one-line, actionable error about one file.
type FileError struct {
	Path, Op string
	Err      error
	Hint     string
}

func (e *FileError) Error() string {
	// The name may be an attacker's (a lock file's): escaped, it can
	// neither move the terminal's cursor nor break the message's line.
	msg := termtext.Quote(e.Path) + ": "
	if e.Op != "" {
		msg += e.Op + ": "
	}
	msg += oneLine(e.Err.Error())
	if e.Hint != "" {
		msg += ": " + e.Hint
	}
	return msg
}

// Unwrap returns the underlying error.
func (e *FileError) Unwrap() error { return e.Err }

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// ParseRecord parses a pid or lock record as Hermes reads it (see
// readJSONFile: a JSON object, or a legacy bare integer; a UTF-8 BOM and
// surrounding whitespace are accepted). A record without a usable pid,
// or with a start time that is no number, is refused: only the judge can
// weigh those.
func ParseRecord(data []byte) (Record, error) {
	if len(data) > MaxRecordSize {
		return Record{}, &CorruptError{Reason: fmt.Sprintf("more than %d bytes, larger than any record", MaxRecordSize)}
	}
	h, err := parseHermesRecord(data, true)
	switch {
	case err != nil:
		return Record{}, err
	case !h.pidOK || h.PID <= 0:
		return Record{}, &CorruptError{Reason: `no usable "pid": a positive integer, or a string of one`}
	case h.startBogus:
		return Record{}, &CorruptError{Reason: `"start_time" is not a whole number`}
	}
	return h.Record, nil
}

// readBounded reads at most MaxRecordSize+1 bytes of path.
func readBounded(path string) ([]byte, error) {
	b, _, err := safefs.ReadRegular(path, MaxRecordSize+1)
	return b, err
}

// ReadRecord reads and parses path; errors are *FileError wrapping
// os.ErrNotExist, os.ErrPermission, ErrEmpty or *CorruptError.
func ReadRecord(path string) (Record, error) {
	b, err := readBounded(path)
	if err != nil {
		return Record{}, &FileError{Path: path, Op: "read", Err: err, Hint: readHint(err)}
	}
	r, err := ParseRecord(b)
	if err != nil {
		return Record{}, &FileError{Path: path, Err: err, Hint: "run `hermes-supervisor sweep` to move it aside"}
	}
	return r, nil
}

func readHint(err error) string {
	switch {
	case errors.Is(err, os.ErrPermission):
		return "fix its owner or permissions, or run as its owner; the file was kept"
	case errors.Is(err, os.ErrNotExist):
		return ""
	}
	return "the file was kept"
}
