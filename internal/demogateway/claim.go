package demogateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hermes-agent/hermes-supervisor/lockstore"
	"github.com/hermes-agent/hermes-supervisor/platform/safefs"
	"github.com/hermes-agent/hermes-supervisor/procstate"
)

// The files the demo gateway claims at start, in the order Hermes' own
// start-up claims them: the runtime lock and pid file, the scoped lock of
// its token, and, as a stand-in host gateway, host-gateway.lock and its
// record.

// claim takes the runtime lock, the pid file and the scoped lock, and
// reports the exit code to use when one of them is taken.
func (g *gateway) claim() (int, bool) {
	if !g.o.naive {
		// get_running_pid: a live gateway of this home refuses the start;
		// a stale pid file goes. Without one there is nothing to judge,
		// and judge's scan of the whole home, most of a restart's start-up,
		// is not run.
		if _, err := os.Lstat(g.layout.PIDFile()); err == nil {
			if e, ok := g.judge(g.layout.PIDFile()); ok {
				if e.Action == lockstore.ActionKeep {
					g.say("gateway already running (PID %d)", e.Record.PID)
					return exitRefused, false
				}
				_ = os.Remove(g.layout.PIDFile())
			}
		}
	}
	rec := lockstore.NewRecord(g.self, g.o.home)
	body, _ := rec.Encode()
	f, err := os.OpenFile(g.layout.RuntimeLock(), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		g.say("open runtime lock: %v", err)
		return exitRefused, false
	}
	if err := safefs.LockFile(f); err != nil {
		f.Close()
		g.say("gateway already running: %s is locked (%v)", g.layout.RuntimeLock(), err)
		return exitRefused, false
	}
	g.lock = f
	// Hermes cuts the file to zero and writes; Rewrite leaves the same
	// bytes without freeing the file's block first.
	_ = safefs.Rewrite(f, body)
	if g.o.readyDelay > 0 {
		time.Sleep(g.o.readyDelay)
	}
	if err := lockstore.WriteExclusive(g.layout.PIDFile(), rec); err != nil {
		if errors.Is(err, os.ErrExist) {
			owner := "unknown"
			if r, err := lockstore.ReadRecord(g.layout.PIDFile()); err == nil {
				owner = fmt.Sprint(r.PID)
			}
			g.say("PID file race lost: %s exists (PID %s)", g.layout.PIDFile(), owner)
		} else {
			g.say("write pid file: %v", err)
		}
		return exitRefused, false
	}
	g.ownsPID = true
	if err := os.MkdirAll(g.o.lockDir, 0o700); err != nil {
		g.say("create lock dir: %v", err)
		return exitRefused, false
	}
	if code, ok := g.claimScoped(); !ok {
		return code, false
	}
	if g.o.host != "" {
		if code, ok := g.claimHost(); !ok {
			return code, false
		}
	}
	if g.o.grandchild {
		if err := g.spawnGrandchild(); err != nil {
			g.say("spawn grandchild: %v", err)
			return exitRefused, false
		}
	}
	g.writeState("running", nil)
	return 0, true
}

func (g *gateway) claimScoped() (int, bool) {
	path := g.layout.ScopedLock(Scope, g.o.token)
	sum := sha256.Sum256([]byte(g.o.token))
	rec := lockstore.NewRecord(g.self, g.o.home)
	rec.Scope = Scope
	rec.IdentityHash = hex.EncodeToString(sum[:])[:16]
	rec.Metadata = json.RawMessage(`{}`)
	rec.UpdatedAt = time.Now().UTC().Format("2006-01-02T15:04:05.000000-07:00")
	for attempt := 0; attempt < 2; attempt++ {
		err := lockstore.WriteExclusive(path, rec)
		if err == nil {
			g.scoped = path
			return 0, true
		}
		if !errors.Is(err, os.ErrExist) {
			g.say("write scoped lock: %v", err)
			return exitRefused, false
		}
		owner, err := lockstore.ReadRecord(path)
		if err != nil {
			// Hermes unlinks an invalid lock and tries again.
			_ = os.Remove(path)
			continue
		}
		inUse := false
		if g.o.naive {
			// The footgun the supervisor exists for: a bare existence
			// check trusts whatever process now has the pid.
			_, err := procstate.NewProber(procstate.Options{}).Inspect(context.Background(), owner.PID)
			inUse = owner.PID > 0 && !errors.Is(err, procstate.ErrNoProcess)
		} else if e, ok := g.judge(path); ok {
			inUse = e.Action == lockstore.ActionKeep
		}
		if inUse {
			g.say("bot token already in use (PID %d)", owner.PID)
			return exitRefused, false
		}
		_ = os.Rename(path, path+".stale")
		_ = os.Remove(path + ".stale")
	}
	g.say("could not claim %s", path)
	return exitRefused, false
}

// claimHost becomes the host gateway as newer Hermes' host_rendezvous does:
// host-gateway.lock held for the process's life, then host-gateway.json
// (0600) naming this process by pid and psutil's createTime.
func (g *gateway) claimHost() (int, bool) {
	f, err := safefs.OpenLockFile(filepath.Join(g.o.lockDir, lockstore.HostGatewayLock), true)
	if err != nil {
		g.say("open host lock: %v", err)
		return exitRefused, false
	}
	if err := safefs.LockFile(f); err != nil {
		f.Close()
		g.say("a host gateway already runs: %v", err)
		return exitRefused, false
	}
	g.host = f
	created, err := procstate.NewProber(procstate.Options{StartTolerance: -1}).CreateTime(context.Background(), g.self.PID)
	if err != nil {
		g.say("read own creation time: %v", err)
		return exitRefused, false
	}
	body, _ := json.Marshal(map[string]any{
		"role":            "gateway",
		"protocolVersion": 1,
		"home":            g.o.home,
		"pid":             g.self.PID,
		"createTime":      float64(created.UnixMilli()) / 1000,
		"port":            0,
		"profiles":        strings.Split(g.o.host, ","),
		"updatedAt":       float64(time.Now().UnixMilli()) / 1000,
	})
	if err := lockstore.WriteFileAtomic(filepath.Join(g.o.lockDir, lockstore.HostGatewayRecord), body, 0o600); err != nil {
		g.say("write host record: %v", err)
		return exitRefused, false
	}
	return 0, true
}
