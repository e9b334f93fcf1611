package ctlsock

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/Microsoft/go-winio"
)

// TestDialOnlyLocalControlPipes attacks the address a client takes from a
// state file anyone who can write the home may forge: opening a UNC name
// makes Windows authenticate to that host with the caller's credentials,
// and a ".." in a \\.\ name is resolved before the open, reaching any
// pipe, file or device. Dial must refuse, without opening it, every
// address that is not one of our own local pipe names.
func TestDialOnlyLocalControlPipes(t *testing.T) {
	var b [8]byte
	_, _ = rand.Read(b[:])
	decoy := "hermes-decoy-" + hex.EncodeToString(b[:])
	// Served by this very user, so the peer check alone would accept it.
	ln, err := winio.ListenPipe(`\\.\pipe\`+decoy, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	file := filepath.Join(shortTempDir(t), "victim")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, addr := range []string{
		pipePrefix + `x\..\` + decoy,
		pipePrefix + `x/../` + decoy,
		`\\.\pipe\` + decoy,
		`\\127.0.0.1\pipe\` + decoy,
		`\\?\UNC\127.0.0.1\pipe\` + decoy,
		`\\.\UNC\127.0.0.1\pipe\` + decoy,
		`\\?\pipe\` + decoy,
		pipePrefix + `x\..\..\` + file,
		file,
		pipePrefix + `0123456789abcdef:evil`,
		pipePrefix + "0123456789abcdef\x00",
		pipePrefix,
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		c, err := Dial(ctx, addr)
		cancel()
		if err == nil {
			c.Close()
			t.Errorf("Dial(%q) connected; want it refused as no endpoint of ours", addr)
			continue
		}
		if !errors.Is(err, ErrNoEndpoint) {
			t.Errorf("Dial(%q) = %v; want it refused as no endpoint of ours (ErrNoEndpoint)", addr, err)
		}
	}
}
