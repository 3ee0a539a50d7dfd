package web

import (
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	thousandsfmt "github.com/passbook-log/passbook/internal/thousands"
)

// What one client may make the HTTP server spend is bounded by
// Options (defaults in server.go):
//
//   - connections: MaxConnections open at once, counted by the listener
//     Serve wraps; one more takes the place of the connection idle
//     longest (a second or more), else it is answered 503
//     too_many_connections and closed, without a goroutine of its own
//     past a few at a time;
//   - time: ReadHeaderTimeout and ReadTimeout cut a client that sends its
//     request slowly (a body cut answers 408 request_timeout),
//     WriteTimeout one that reads its answer slowly, IdleTimeout an idle
//     keep-alive connection; SSE streams and long polls lift the read
//     deadline (nothing more is read), and a stream bounds each write by
//     StreamWriteTimeout instead of the whole answer;
//   - SSE streams: MaxStreams open at once (503 too_many_streams with
//     Retry-After), and MaxStreamsPerClient streams and long polls per
//     remote IP (429 too_many_requests with Retry-After);
//   - a slow dashboard subscriber never holds the others or an append: its
//     updates wait in a buffer of a few; past it the subscriber is dropped
//     (its browser reconnects) and counted.
//
// Each refusal is counted in /metrics and logged at warn level at most
// once a minute, with the number refused since the previous line.

// retryAfterSeconds is the Retry-After of a refusal for load.
const retryAfterSeconds = 5

// limitLog logs that a limit bites, at most once a minute, with how many
// times it did since the previous line: a flood is one line a minute, not
// one per request.
type limitLog struct {
	log *slog.Logger
	msg string
	key string // of the count: "refused_since_last_line"

	mu   sync.Mutex
	last time.Time
	n    int64
}

func (l *limitLog) hit(args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n++
	now := time.Now()
	if !l.last.IsZero() && now.Sub(l.last) < time.Minute {
		return
	}
	l.log.Warn(l.msg, append(args, l.key, l.n)...)
	l.last, l.n = now, 0
}

// connLimiter is a listener that keeps at most max connections open.
// At the limit, a new connection takes the place of the one idle longest
// (a keep-alive connection between requests, or one that has sent
// nothing yet), if idle for a second or more: a flood of idle
// connections does not lock an operator out. Otherwise it is answered
// 503 and closed.
type connLimiter struct {
	net.Listener
	s    *Server
	max  int
	open atomic.Int64
	// refusers bounds the goroutines that answer refused connections
	// (each for under a second); past it a refused connection is closed
	// without an answer.
	refusers chan struct{}

	mu struct {
		sync.Mutex
		idle map[*limitedConn]time.Time // since when, per connection between requests
	}
}

// evictAfter is how long a connection must have been idle to make room
// for a new one at the limit.
const evictAfter = time.Second

func (s *Server) limitListener(ln net.Listener) *connLimiter {
	l := &connLimiter{Listener: ln, s: s, max: s.o.MaxConnections, refusers: make(chan struct{}, 64)}
	l.mu.idle = map[*limitedConn]time.Time{}
	return l
}

func (l *connLimiter) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		n := l.open.Add(1)
		if n > int64(l.max) && l.evictIdle() {
			l.open.Add(-1)
			n = l.open.Add(1)
		}
		if n > int64(l.max) {
			l.open.Add(-1)
			l.s.m.connRefused.Inc()
			l.s.connLog.hit("limit", l.max, "flag", "--http-max-connections")
			l.refuse(c)
			continue
		}
		l.s.m.conns.Inc()
		return &limitedConn{Conn: c, l: l}, nil
	}
}

// connState follows the http.Server's connections: those between
// requests (or before the first) may be evicted.
func (l *connLimiter) connState(c net.Conn, st http.ConnState) {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	lc, ok := c.(*limitedConn)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch st {
	case http.StateNew, http.StateIdle:
		l.mu.idle[lc] = time.Now()
	default:
		delete(l.mu.idle, lc)
	}
}

// evictIdle closes the connection idle longest, if idle for evictAfter
// or more, and reports whether it did.
func (l *connLimiter) evictIdle() bool {
	l.mu.Lock()
	var oldest *limitedConn
	var since time.Time
	for c, t := range l.mu.idle {
		if oldest == nil || t.Before(since) {
			oldest, since = c, t
		}
	}
	if oldest == nil || time.Since(since) < evictAfter {
		l.mu.Unlock()
		return false
	}
	delete(l.mu.idle, oldest)
	l.mu.Unlock()
	oldest.Close()
	l.s.m.connEvicted.Inc()
	l.s.evictLog.hit("limit", l.max, "flag", "--http-max-connections")
	return true
}

// refuse answers c 503 and closes it. It first reads what the client
// sent (its request, for half a second at most) and after answering what
// else arrives (for a fifth of a second): closing with unread bytes would
// reset the connection and lose the answer.
func (l *connLimiter) refuse(c net.Conn) {
	if l.s.o.TLS != nil {
		c.Close() // a TLS client would not read a plain answer
		return
	}
	select {
	case l.refusers <- struct{}{}:
	default:
		c.Close()
		return
	}
	go func() {
		defer func() { <-l.refusers }()
		defer c.Close()
		buf := make([]byte, 4<<10)
		c.SetDeadline(time.Now().Add(500 * time.Millisecond))
		c.Read(buf)
		body := `{"error":{"code":"` + CodeTooManyConnections + `","message":"the server has ` + thousandsfmt.Int(l.max) +
			` connections open, its limit (--http-max-connections); try again later","details":{"limit":` + strconv.Itoa(l.max) + `}}}` + "\n"
		io.WriteString(c, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nCache-Control: no-store\r\n"+
			"Retry-After: "+strconv.Itoa(retryAfterSeconds)+"\r\nConnection: close\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"+body)
		if tc, ok := c.(interface{ CloseWrite() error }); ok {
			tc.CloseWrite()
		}
		c.SetDeadline(time.Now().Add(200 * time.Millisecond))
		for {
			if _, err := c.Read(buf); err != nil {
				return
			}
		}
	}()
}

// limitedConn gives its place back when closed.
type limitedConn struct {
	net.Conn
	l    *connLimiter
	once sync.Once
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.l.open.Add(-1)
		c.l.s.m.conns.Dec()
		c.l.mu.Lock()
		delete(c.l.mu.idle, c)
		c.l.mu.Unlock()
	})
	return err
}

// streamLimiter counts the SSE streams open (MaxStreams) and the streams
// and long polls of each client (MaxStreamsPerClient).
type streamLimiter struct {
	s *Server

	mu struct {
		sync.Mutex
		streams  int
		byClient map[string]int
	}
}

func newStreamLimiter(s *Server) *streamLimiter {
	l := &streamLimiter{s: s}
	l.mu.byClient = map[string]int{}
	return l
}

// clientOf is the client a request counts against: its remote IP (a
// proxy in front makes every client one; raise the limit there).
func clientOf(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// acquire takes a place for r: an SSE stream (stream true) or a long
// poll. It returns the function that gives it back, or the refusal.
func (l *streamLimiter) acquire(r *http.Request, stream bool) (func(), error) {
	client := clientOf(r)
	l.mu.Lock()
	defer l.mu.Unlock()
	if stream && l.mu.streams >= l.s.o.MaxStreams {
		l.s.m.streamsRefused.Inc()
		l.s.streamLog.hit("limit", l.s.o.MaxStreams, "flag", "--http-max-streams")
		e := errorf(http.StatusServiceUnavailable, CodeTooManyStreams,
			"the server has %s SSE streams open, its limit (--http-max-streams); try again later", thousandsfmt.Int(l.s.o.MaxStreams))
		e.Details = map[string]any{"limit": l.s.o.MaxStreams}
		e.RetryAfter = retryAfterSeconds
		return nil, e
	}
	if l.mu.byClient[client] >= l.s.o.MaxStreamsPerClient {
		l.s.m.throttled.Inc()
		l.s.clientLog.hit("client", client, "limit", l.s.o.MaxStreamsPerClient, "flag", "--http-max-streams-per-client")
		e := errorf(http.StatusTooManyRequests, CodeTooManyRequests,
			"%s has %s SSE streams and long polls open, the limit per client (--http-max-streams-per-client); close one or try again later",
			client, thousandsfmt.Int(l.s.o.MaxStreamsPerClient))
		e.Details = map[string]any{"limit": l.s.o.MaxStreamsPerClient}
		e.RetryAfter = retryAfterSeconds
		return nil, e
	}
	if stream {
		l.mu.streams++
	}
	l.mu.byClient[client]++
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			if stream {
				l.mu.streams--
			}
			if l.mu.byClient[client]--; l.mu.byClient[client] <= 0 {
				delete(l.mu.byClient, client)
			}
		})
	}, nil
}
