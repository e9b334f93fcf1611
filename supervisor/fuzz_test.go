package supervisor

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"testing"
	"time"

	"go.uber.org/zap"
)

// FuzzParseStatusFile holds the state-file reader, and the status printer
// fed whatever it accepted, to never panicking: `status` must answer even
// over a state file torn by a crash.
func FuzzParseStatusFile(f *testing.F) {
	for _, seed := range []string{
		`{"state":"running","home":"/h","lock_dir":"/l","supervisor":{"pid":7,"start_time":1,"argv":["hs","run"]},"child":{"pid":8,"start_time":2,"argv":["hermes"],"started_at":"2026-09-01T10:00:00Z","ready":true},"restarts":2,"last_exit":{"code":1,"at":"2026-09-01T10:00:00Z","uptime":5},"locks":[{"path":"/l/x.lock","kind":"scoped-lock"}]}`,
		`{"state":"failed","reason":"crash loop"}`, `{"child":null}`, `{"next_start":"2026-09-01T10:00:00Z"}`, `{`, ``, `{"state":7}`,
	} {
		f.Add([]byte(seed))
	}
	now := time.Date(2026, 9, 1, 10, 0, 30, 0, time.UTC)
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := parseStatusFile(data)
		if err != nil {
			return
		}
		if st.Source != "state-file" {
			t.Fatalf("source %q", st.Source)
		}
		_ = st.Up()
		if err := st.WriteText(io.Discard, now); err != nil {
			t.Fatal(err)
		}
	})
}

// FuzzControlRequest feeds one connection's worth of bytes to the control
// endpoint: it must answer with at most one JSON line, never pass an
// unknown verb on unless the request decoded, and let the connection go.
func FuzzControlRequest(f *testing.F) {
	for _, seed := range []string{
		"{\"verb\":\"status\",\"id\":1}\n", "{\"verb\":\"stop\"}\n", "garbage\n", "\x00\xff\n", "{\"verb\":", "[]\n", "{\"verb\":\"status\"}{\"verb\":\"stop\"}\n",
	} {
		f.Add([]byte(seed))
	}
	// Loopback TCP rather than net.Pipe: the client must be able to
	// half-close, as a real one that sent no newline does.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		f.Fatal(err)
	}
	defer ln.Close()
	f.Fuzz(func(t *testing.T, data []byte) {
		var got []string
		s := &controlServer{log: zap.NewNop(), ctx: context.Background(), slots: make(chan struct{}, maxClients), timeout: 5 * time.Second,
			handle: func(_ context.Context, verb string) Response {
				got = append(got, verb)
				return Response{OK: true}
			}}
		client, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		server, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { s.serveConn(&pendingConn{conn: server}); close(done) }()
		go func() {
			_, _ = client.Write(data)
			_ = client.(*net.TCPConn).CloseWrite()
		}()
		_ = client.SetReadDeadline(time.Now().Add(10 * time.Second))
		r := bufio.NewReader(client)
		line, err := r.ReadBytes('\n')
		client.Close()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("the endpoint kept the connection after its answer to %q", data)
		}
		if len(line) == 0 {
			if err == nil || len(got) > 0 {
				t.Fatalf("no answer to %q, but the handler ran: %v", data, got)
			}
			return
		}
		var resp Response
		if err := json.Unmarshal(line, &resp); err != nil {
			t.Fatalf("answer to %q is not one JSON line: %q", data, line)
		}
		if len(got) > 1 {
			t.Fatalf("one connection ran %d verbs: %v", len(got), got)
		}
		if resp.OK != (len(got) == 1) {
			t.Fatalf("answer %+v to %q, handler ran %v", resp, data, got)
		}
	})
}
