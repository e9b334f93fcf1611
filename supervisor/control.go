package supervisor

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/hermes-agent/hermes-supervisor/lockstore"
	"github.com/hermes-agent/hermes-supervisor/platform/ctlsock"
)

// The control protocol is one JSON line each way, like Hermes' own
// gateway.sock: {"verb":"status","id":1} → {"id":1,"ok":true,"status":{…}}.

// Request is one control command.
type Request struct {
	Verb string `json:"verb"`
	ID   int64  `json:"id,omitempty"`
}

// Response answers one Request.
type Response struct {
	ID     int64   `json:"id,omitempty"`
	OK     bool    `json:"ok"`
	Error  string  `json:"error,omitempty"`
	Status *Status `json:"status,omitempty"`
}

// Limits of the endpoint: it must survive garbage, oversized requests and
// floods of clients without growing, and answer its owner throughout.
const (
	maxRequest = 4 << 10
	// maxClients bounds the requests being handled at once.
	maxClients = 16
	// maxPending bounds the connections that have not sent their request
	// yet. A new one past it pushes out the oldest, rather than being
	// refused: idle clients that came first must not lock out a client
	// that sends its request at once, as every real one does.
	maxPending = 32
)

// The accept loop retries a failed accept (EMFILE, ENFILE, ENOBUFS…)
// after a pause that doubles from acceptRetryMin to acceptRetryMax, as
// net/http's Server.Serve does: the endpoint is how a shell reaches the
// supervisor, and a moment without file descriptors must not end it.
const (
	acceptRetryMin = 5 * time.Millisecond
	acceptRetryMax = time.Second
)

// DefaultRequestTimeout is how long a control client may take to send its
// request and read the answer before the endpoint drops it.
const DefaultRequestTimeout = 5 * time.Second

// busyMessage is the answer to a client past maxClients, or pushed out
// past maxPending before its request was read; Call retries on it.
const busyMessage = "too many clients; try again"

// ErrBusy reports that the endpoint kept refusing a request because too
// many clients held it, until the caller's context ended.
var ErrBusy = errors.New("control endpoint busy: too many clients")

type handler func(ctx context.Context, verb string) Response

type controlServer struct {
	ln     net.Listener
	log    *zap.Logger
	handle handler
	slots  chan struct{}
	// timeout bounds a client's request and the write of its answer.
	timeout time.Duration
	wg      sync.WaitGroup
	ctx     context.Context
	cancel  context.CancelFunc

	mu sync.Mutex
	// pending holds the connections whose request is not read yet,
	// oldest first.
	pending []*pendingConn
}

// pendingConn is a connection whose request is not read yet.
type pendingConn struct {
	conn net.Conn
	// evicted is set, under the server's mu, when a newer connection
	// pushed this one out; its request, even if read, is not served.
	evicted bool
}

// listenControl starts the control endpoint at the configured address,
// else at the home's other addresses, else at a fresh private one, and
// records where in the status. An endpoint that cannot be made at all is
// said once in the log and supervision goes on without it: the endpoint
// is a convenience, the gateway is the job, and a squatter of a guessable
// address must not be able to stop it from running.
func (s *Supervisor) listenControl() *controlServer {
	addrs := []string{s.cfg.ControlAddress}
	for _, a := range ctlsock.Addresses(s.cfg.Layout.Home) {
		if !slices.Contains(addrs, a) {
			addrs = append(addrs, a)
		}
	}
	ln, addr, refused := ctlsock.ListenAny(addrs, s.cfg.ControlUsers...)
	if ln == nil {
		s.control.err = refused.Error()
		s.log.Warn("no control endpoint: supervising without one; `status` reads the state file, "+
			"and `stop` must go through the service manager or SIGTERM; make the refused address usable and restart",
			zap.String("refused", s.control.err))
		return nil
	}
	s.control.addr = addr
	if refused != nil {
		s.log.Warn("control endpoint moved: the usual address was refused; clients find this one in the state file; "+
			"make the refused address usable to get it back",
			zap.String("control", addr), zap.String("refused", refused.Error()))
	}
	return serveControl(ln, s.cfg.RequestTimeout, s.log, s.Do)
}

// serveControl serves ln with h until Close.
func serveControl(ln net.Listener, timeout time.Duration, log *zap.Logger, h handler) *controlServer {
	ctx, cancel := context.WithCancel(context.Background())
	s := &controlServer{ln: ln, log: log, handle: h, slots: make(chan struct{}, maxClients), timeout: timeout, ctx: ctx, cancel: cancel}
	s.wg.Add(1)
	go s.serve()
	return s
}

func (s *controlServer) serve() {
	defer s.wg.Done()
	var delay time.Duration
	for {
		conn, err := s.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) || s.ctx.Err() != nil {
				return
			}
			if delay == 0 {
				s.log.Warn("control endpoint cannot accept; retrying", zap.Error(err))
				delay = acceptRetryMin
			} else {
				delay = min(2*delay, acceptRetryMax)
			}
			t := time.NewTimer(delay)
			select {
			case <-s.ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			continue
		}
		if delay != 0 {
			s.log.Info("control endpoint accepts again")
			delay = 0
		}
		s.admit(conn)
	}
}

// admit starts serving conn, pushing out the oldest connection that has
// not sent its request when maxPending of them wait.
func (s *controlServer) admit(conn net.Conn) {
	pc := &pendingConn{conn: conn}
	s.mu.Lock()
	if len(s.pending) >= maxPending {
		old := s.pending[0]
		s.pending = slices.Delete(s.pending, 0, 1)
		old.evicted = true
		// Wakes its reader, which answers busy and closes it.
		_ = old.conn.SetReadDeadline(time.Now())
	}
	s.pending = append(s.pending, pc)
	s.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.serveConn(pc)
	}()
}

// readDone takes pc out of the pending set and reports whether it was
// evicted first.
func (s *controlServer) readDone(pc *pendingConn) (evicted bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if pc.evicted {
		return true
	}
	if i := slices.Index(s.pending, pc); i >= 0 {
		s.pending = slices.Delete(s.pending, i, i+1)
	}
	return false
}

func (s *controlServer) serveConn(pc *pendingConn) {
	conn := pc.conn
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(s.timeout))
	line, err := bufio.NewReaderSize(io.LimitReader(conn, maxRequest+1), maxRequest+1).ReadSlice('\n')
	if s.readDone(pc) {
		s.reply(conn, Response{Error: busyMessage})
		return
	}
	if err != nil && !(errors.Is(err, io.EOF) && len(line) > 0) {
		if errors.Is(err, bufio.ErrBufferFull) || len(line) > maxRequest {
			s.reply(conn, Response{Error: fmt.Sprintf("request larger than %d bytes", maxRequest)})
		}
		return
	}
	var req Request
	if err := json.Unmarshal(line, &req); err != nil {
		s.reply(conn, Response{Error: "request is not a JSON object: " + err.Error()})
		return
	}
	select {
	case s.slots <- struct{}{}:
		defer func() { <-s.slots }()
	default:
		// Refuse rather than queue: a flood must not grow memory.
		s.reply(conn, Response{Error: busyMessage})
		return
	}
	_ = conn.SetReadDeadline(time.Time{})
	resp := s.handle(s.ctx, req.Verb)
	resp.ID = req.ID
	s.reply(conn, resp)
}

func (s *controlServer) reply(conn net.Conn, r Response) {
	_ = conn.SetWriteDeadline(time.Now().Add(s.timeout))
	b, _ := json.Marshal(r)
	_, _ = conn.Write(append(b, '\n'))
}

// Close stops accepting, cancels waiting requests and waits for handlers.
func (s *controlServer) Close() error {
	err := s.ln.Close()
	s.cancel()
	s.wg.Wait()
	return err
}

// Call sends one verb to the supervisor at addr and returns its answer. It
// wraps ctlsock.ErrNoEndpoint when no supervisor listens, and ErrBusy when
// the endpoint stayed full until ctx ended: a flood of clients delays an
// answer, it does not turn into an error while there is time to wait.
func Call(ctx context.Context, addr, verb string) (Response, error) {
	for {
		resp, err := call(ctx, addr, verb)
		if err != nil || resp.Error != busyMessage {
			return resp, err
		}
		t := time.NewTimer(20 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return Response{}, fmt.Errorf("%s to %s: %w", verb, addr, ErrBusy)
		case <-t.C:
		}
	}
}

// CallHome sends verb to the supervisor of home, trying each address it
// may listen at (ctlsock.Addresses, then the one its state file names,
// where a supervisor whose usual address was refused listens) until one
// of ours answers. An
// endpoint that is there but does not answer in time ends the search, as
// does any error but these, which only move on to the next address: none
// listening (ctlsock.ErrNoEndpoint, returned once every address said so,
// naming them all), another user's socket (ctlsock.ErrForeignPeer) and
// permission denied (os.ErrPermission), one of which is returned if no
// address answered.
func CallHome(ctx context.Context, home, verb string) (Response, error) {
	addrs := homeAddresses(home)
	var refused error
	for _, a := range addrs {
		resp, err := Call(ctx, a, verb)
		switch {
		case err == nil:
			return resp, nil
		case errors.Is(err, ctlsock.ErrForeignPeer), errors.Is(err, os.ErrPermission):
			if refused == nil {
				refused = err
			}
		case errors.Is(err, ctlsock.ErrNoEndpoint):
		default:
			return Response{}, err
		}
	}
	if refused != nil {
		return Response{}, refused
	}
	return Response{}, fmt.Errorf("dial %s: %w", strings.Join(addrs, ", "), ctlsock.ErrNoEndpoint)
}

// homeAddresses lists every address a supervisor of home may listen at:
// home's own, then those of the directory it resolves to. A supervisor
// listens where its resolved home says, and a long link and its short
// target give different addresses. Each is still dialled with the peer
// check, so a link names no supervisor we would not believe anyway.
func homeAddresses(home string) []string {
	addrs := ctlsock.Addresses(home)
	add := func(a string) {
		if a != "" && !slices.Contains(addrs, a) {
			addrs = append(addrs, a)
		}
	}
	if r, err := filepath.EvalSymlinks(home); err == nil {
		for _, a := range ctlsock.Addresses(r) {
			add(a)
		}
	}
	// Dialled with the same checks as the rest: a forged file names
	// no endpoint we would not believe anyway.
	if st, err := ReadStatusFile(lockstore.Layout{Home: home}.SupervisorState()); err == nil {
		add(st.Control)
	}
	return addrs
}

func call(ctx context.Context, addr, verb string) (Response, error) {
	conn, err := ctlsock.Dial(ctx, addr)
	if err != nil {
		return Response{}, err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Now()) })
	defer stop()
	b, _ := json.Marshal(Request{Verb: verb, ID: 1})
	_, werr := conn.Write(append(b, '\n'))
	// A server that refused us as busy may have answered and closed
	// before our request arrived: read its answer even if the write broke.
	var resp Response
	dec := json.NewDecoder(bufio.NewReader(conn))
	if err := dec.Decode(&resp); err != nil {
		if werr != nil {
			return Response{}, fmt.Errorf("send %s to %s: %w", verb, addr, werr)
		}
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return Response{}, fmt.Errorf("read answer to %s from %s: %w", verb, addr, err)
	}
	return resp, nil
}
