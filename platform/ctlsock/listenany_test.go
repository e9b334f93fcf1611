package ctlsock

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"
)

// TestListenAnyFallsBack: every usual address is taken (here by a live
// listener, as a squatter's would be). ListenAny must still listen, at a
// fresh address of its own that Dial reaches; the endpoint failing must
// never stop supervision.
func TestListenAnyFallsBack(t *testing.T) {
	first := takenAddress(t)
	ln, got, refused := ListenAny([]string{first})
	if ln == nil {
		t.Fatalf("ListenAny gave no listener: %v", refused)
	}
	defer ln.Close()
	if got == first || refused == nil {
		t.Fatalf("ListenAny listens at %q (refused: %v), want a fresh address and why %q was passed over", got, refused, first)
	}
	go sayHi(ln)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// A throwaway connection first: under Wine, go-winio's first Accept
	// never completes (microsoft/go-winio#173); the server closes it.
	if c, err := Dial(ctx, got); err == nil {
		c.Close()
	}
	c, err := Dial(ctx, got)
	if err != nil {
		t.Fatalf("dial the fresh address %q: %v", got, err)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 3)
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "hi\n" {
		t.Fatalf("read %q %v", buf, err)
	}
	c.Close()
	checkFresh(t, got)
	ln.Close()
	if _, err := Dial(ctx, got); !errors.Is(err, ErrNoEndpoint) {
		t.Fatalf("dial %q after Close: %v, want ErrNoEndpoint", got, err)
	}
}
