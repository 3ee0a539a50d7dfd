package kafka

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime/debug"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/passbook-log/passbook/auth"
	"github.com/passbook-log/passbook/internal/thousands"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// conn is one client connection. Its reader goroutine reads, decodes and
// handles requests one after another — so appends from one connection
// land in the order they were sent — and queues the replies; its writer
// goroutine runs each reply's wait and writes the responses in request
// order, so a slow fsync or a long poll holds back only the responses
// behind it, never the reading and appending of the requests behind it.
type conn struct {
	s      *Server
	nc     net.Conn
	host   string // advertised to this connection's clients
	port   int32
	remote string
	ip     string // remote's address, for max.connections.per.ip
	queue  chan pending

	// For connections.max.idle.ms and for eviction at a connection
	// limit: the time of the last request read or response written, and
	// how many requests are being read (0 or 1) or not yet answered.
	lastActive atomic.Int64 // unix nanoseconds
	busy       atomic.Int32
	stopping   atomic.Bool // Shutdown: stop reading

	// respCharged is what the response being built holds of the
	// server's queued.max.response.bytes. Only the writer touches it.
	respCharged int64

	// clientID and api are the client id and API key of the request
	// being handled; only the reader goroutine touches them.
	clientID string
	api      kmsg.Key

	// topicIDs maps the topic IDs the connection's requests named to
	// their topics' names (topicids.go); only the reader goroutine
	// touches it.
	topicIDs map[[16]byte]string

	// principal is who the connection is ("User:name"): User:ANONYMOUS,
	// the "User:CN" of its TLS client certificate, or the user it
	// authenticated as with SASL. sasl is its SASL progress (sasl.go).
	// Only the reader goroutine touches them once it runs.
	principal string
	sasl      saslState

	// fetchBuf holds the record bytes of the fetch response being
	// written, and fetchFiles the partitions whose records are sent from
	// their segment files (pinned until written). Only the writer
	// goroutine touches them: fetches run in their reply's wait, one at
	// a time, and the response is written (or copied out) before the
	// next one runs. raw is the connection's descriptor for sendfile,
	// nil when it cannot (TLS).
	fetchBuf   []byte
	fetchFiles []fileRecords
	raw        syscall.RawConn
}

// pending is a reply waiting to be written.
type pending struct {
	reply
	corr       int32
	flexHeader bool // response header v1 (tagged fields)
	// raw, if not nil, is a bare SASL token to write, size-prefixed,
	// instead of a response (after SaslHandshake v0; see sasl.go).
	raw []byte
}

func newConn(s *Server, nc net.Conn, host string, port int32) *conn {
	c := &conn{s: s, nc: nc, host: host, port: port, remote: nc.RemoteAddr().String(),
		queue: make(chan pending, s.o.MaxInFlight), principal: auth.Anonymous}
	c.ip = hostOf(c.remote)
	c.raw = rawConnOf(nc)
	c.lastActive.Store(time.Now().UnixNano())
	return c
}

// stopReading makes the reader stop after the request it is reading:
// the writer then answers what was read, and the connection closes.
func (c *conn) stopReading() {
	c.stopping.Store(true)
	c.nc.SetReadDeadline(time.Now())
}

// idleSince reports since when the connection has had nothing to read or
// write, and false if it has something.
func (c *conn) idleSince() (int64, bool) {
	if c.busy.Load() > 0 {
		return 0, false
	}
	return c.lastActive.Load(), true
}

func (c *conn) active() { c.lastActive.Store(time.Now().UnixNano()) }

func (c *conn) serve() {
	defer c.s.forget(c)
	log := c.s.log.With("remote", c.remote)
	log.Debug("kafka: connection opened")
	if tc, ok := c.nc.(*tls.Conn); ok && !c.handshake(log, tc) {
		c.nc.Close()
		return
	}
	written := make(chan struct{})
	go func() {
		defer close(written)
		c.writeLoop(log)
	}()
	err := c.readLoop()
	close(c.queue)
	<-written
	c.nc.Close()
	switch {
	case err == nil, errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed), errors.Is(err, os.ErrDeadlineExceeded):
		log.Debug("kafka: connection closed")
	case errors.Is(err, errLimit), errors.Is(err, ErrRequestTooLarge):
		log.Debug("kafka: connection closed by a limit", "err", err) // counted and logged by limitHit
	case errors.Is(err, errSecurityClose):
		log.Debug("kafka: connection closed", "err", err) // counted and logged where it happened
	default:
		log.Warn("kafka: closing connection", "err", err)
	}
}

// errLimit is returned by readLoop when a limit closed the connection
// (it has been counted and logged already).
var errLimit = errors.New("kafka: connection closed by a limit")

func (c *conn) readLoop() error {
	br := bufio.NewReaderSize(c.nc, 8<<10)
	var size [4]byte
	for {
		first, err := c.waitForRequest(br)
		if err != nil {
			return err
		}
		// A request has started: it must arrive within the request
		// timeout, memory and all.
		c.busy.Add(1)
		deadline := time.Now().Add(c.s.o.RequestTimeout)
		c.nc.SetReadDeadline(deadline)
		size[0] = first
		if _, err := io.ReadFull(br, size[1:]); err != nil {
			return c.readFailed(err)
		}
		n := int32(binary.BigEndian.Uint32(size[:]))
		if n < 0 {
			return fmt.Errorf("%w: negative frame size %d", ErrMalformed, n)
		}
		if limit := c.frameLimit(); int64(n) > int64(limit) {
			if limit < c.s.o.SocketRequestMaxBytes {
				c.s.limitHit(closeTooLarge, c.remote, "kafka: closing connection: a request before SASL authentication is over sasl.server.max.receive.size",
					"size", n, "limit", limit)
				return fmt.Errorf("%w: a request of %s bytes before SASL authentication is over sasl.server.max.receive.size, %s", ErrRequestTooLarge, thousands.Int(n), thousands.Int(limit))
			}
			c.s.limitHit(closeTooLarge, c.remote, "kafka: closing connection: a request is over socket.request.max.bytes (--socket-request-max-bytes)",
				"size", n, "limit", c.s.o.SocketRequestMaxBytes)
			return fmt.Errorf("%w: a request of %s bytes is over socket.request.max.bytes, %s", ErrRequestTooLarge, thousands.Int(n), thousands.Int(c.s.o.SocketRequestMaxBytes))
		}
		frame, charged, err := c.readFrame(br, int(n), deadline)
		if err != nil {
			c.s.requestBytes.release(charged)
			return c.readFailed(err)
		}
		c.active()
		reuse := !c.sasl.raw && reusableFrame(frame) // before handle changes the SASL state
		p, ok, err := c.handle(c.s.polls, frame)
		if reuse && err == nil {
			c.s.frames.put(frame) // framepool.go: its charge goes with it
		} else {
			c.s.requestBytes.release(charged)
		}
		if err != nil {
			return err
		}
		if ok {
			c.busy.Add(1) // until written
			c.queue <- p
		}
		c.busy.Add(-1)
		c.active()
		if p.closeAfter != nil {
			return p.closeAfter // once what was queued is written
		}
	}
}

// waitForRequest reads the first byte of the next request, closing the
// connection once it has been idle for connections.max.idle.ms.
func (c *conn) waitForRequest(br *bufio.Reader) (byte, error) {
	idle := c.s.o.ConnectionsMaxIdle
	for {
		if c.stopping.Load() {
			return 0, io.EOF
		}
		if br.Buffered() == 0 {
			last := time.Unix(0, c.lastActive.Load())
			c.nc.SetReadDeadline(last.Add(idle))
			if c.stopping.Load() {
				return 0, io.EOF // stopReading's deadline may have been overwritten
			}
		}
		b, err := br.ReadByte()
		if err == nil {
			return b, nil
		}
		if !errors.Is(err, os.ErrDeadlineExceeded) || c.stopping.Load() {
			return 0, err
		}
		if c.busy.Load() > 0 {
			c.active() // a response is still to be written: not idle
			continue
		}
		if last := time.Unix(0, c.lastActive.Load()); time.Since(last) < idle {
			continue // a response was written meanwhile
		}
		c.s.limitHit(closeIdle, c.remote, "kafka: closing idle connection (connections.max.idle.ms, --connections-max-idle)",
			"idle", idle)
		return 0, errLimit
	}
}

// readFailed classifies a read error inside a request.
func (c *conn) readFailed(err error) error {
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded), errors.Is(err, context.DeadlineExceeded):
		if c.stopping.Load() {
			return err
		}
		c.s.limitHit(closeSlowRequest, c.remote, "kafka: closing connection: a request did not arrive within the request timeout (--request-timeout)",
			"timeout", c.s.o.RequestTimeout)
		return errLimit
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return fmt.Errorf("%w: truncated frame: %w", ErrMalformed, io.ErrUnexpectedEOF)
	}
	return err
}

// readFrame reads an n-byte frame into a buffer from the server's
// framePool: an idle one that fits the whole frame if there is one (its
// memory is held already), else one that grows as the bytes arrive —
// never to the declared size before they do — taking each growth from
// the server's queued.max.request.bytes, and waiting for it (not reading
// the socket) while it is spent. charged is what it holds of the budget,
// the frame's capacity, for the caller to release or give back with the
// frame, also on error.
func (c *conn) readFrame(br *bufio.Reader, n int, deadline time.Time) (frame []byte, charged int64, err error) {
	frame = c.s.frames.take(n)
	for len(frame) < n {
		if len(frame) == cap(frame) {
			want := min(n, max(frameFirst, 2*cap(frame)))
			grown := c.s.frames.take(want)
			if grown != nil {
				c.s.requestBytes.release(int64(cap(frame))) // the old buffer is dropped; the new one's charge came with it
			} else {
				size := frameSize(want)
				if err := c.s.frames.acquire(c.s.polls, deadline, int64(size-cap(frame))); err != nil {
					if c.s.polls.Err() != nil {
						return nil, int64(cap(frame)), net.ErrClosed
					}
					return nil, int64(cap(frame)), err
				}
				grown = make([]byte, 0, size)
			}
			frame = append(grown, frame...)
		}
		k, err := br.Read(frame[len(frame):min(n, cap(frame))]) // not into the next request
		frame = frame[:len(frame)+k]
		if err != nil && len(frame) < n {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, int64(cap(frame)), err
		}
	}
	return frame, int64(cap(frame)), nil
}

// handle decodes one request frame and runs its handler. ok is false
// when nothing is to be written back. An error closes the connection.
func (c *conn) handle(ctx context.Context, frame []byte) (p pending, ok bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			c.s.log.Error("kafka: handler panic", "remote", c.remote, "panic", r, "stack", string(debug.Stack()))
			err = fmt.Errorf("kafka: handler panic: %v", r)
		}
	}()
	if c.sasl.raw {
		return c.rawToken(frame)
	}
	req, h, corr, err := decodeRequest(frame)
	if err == nil || errors.Is(err, errAPIVersionsUnsupported) {
		if err := c.checkSASL(h.key); err != nil {
			return p, false, err
		}
	}
	if errors.Is(err, errAPIVersionsUnsupported) {
		// Answer with a v0 body and header saying which versions exist;
		// the client retries with one of them.
		resp := apiVersionsResponse(0)
		resp.ErrorCode = kerr.UnsupportedVersion.Code
		return pending{reply: reply{resp: resp}, corr: corr}, true, nil
	}
	if err != nil {
		return p, false, err
	}
	c.clientID, c.api = clientIDOf(frame), h.key
	if c.s.log.Enabled(ctx, slog.LevelDebug) {
		c.s.log.Debug("kafka: request", "remote", c.remote, "api", h.key.Name(), "version", req.GetVersion(), "correlation", corr)
	}
	ids := c.topicIDsIn(req) // topic IDs in, as names, for the handler
	r, err := h.serve(ctx, c, req)
	if err != nil {
		return p, false, err
	}
	if r.resp == nil {
		return p, false, nil
	}
	r = ids.out(c, r) // and the IDs into its response
	r.resp.SetVersion(req.GetVersion())
	return pending{reply: r, corr: corr, flexHeader: r.resp.IsFlexible() && h.key != kmsg.ApiVersions}, true, nil
}

var errAPIVersionsUnsupported = errors.New("kafka: ApiVersions version not supported")

// decodeRequest parses a request frame (without its size prefix): the
// request header (v1, or v2 with tagged fields for flexible versions;
// client_id is always an int16-length string) and the body.
func decodeRequest(frame []byte) (kmsg.Request, *handler, int32, error) {
	if len(frame) < 10 {
		return nil, nil, 0, fmt.Errorf("%w: %d-byte frame is shorter than a request header", ErrMalformed, len(frame))
	}
	key := int16(binary.BigEndian.Uint16(frame))
	version := int16(binary.BigEndian.Uint16(frame[2:]))
	corr := int32(binary.BigEndian.Uint32(frame[4:]))
	h := lookup(key)
	if h == nil {
		return nil, nil, corr, fmt.Errorf("%w: API key %d", ErrUnsupported, key)
	}
	if version < h.min || version > h.max {
		if h.key == kmsg.ApiVersions {
			return nil, h, corr, errAPIVersionsUnsupported
		}
		return nil, nil, corr, fmt.Errorf("%w: %s v%d (this server serves v%d–v%d)", ErrUnsupported, h.key.Name(), version, h.min, h.max)
	}
	body := frame[8:]
	idLen := int16(binary.BigEndian.Uint16(body))
	body = body[2:]
	if idLen < -1 || int(idLen) > len(body) {
		return nil, nil, corr, fmt.Errorf("%w: client id length %d", ErrMalformed, idLen)
	}
	if idLen > 0 {
		body = body[idLen:]
	}
	req := h.key.Request()
	req.SetVersion(version)
	if req.IsFlexible() {
		var err error
		if body, err = skipTags(body); err != nil {
			return nil, nil, corr, fmt.Errorf("%w: request header: %w", ErrMalformed, err)
		}
	}
	if err := req.ReadFrom(body); err != nil {
		return nil, nil, corr, fmt.Errorf("%w: %s v%d: %w", ErrMalformed, h.key.Name(), version, err)
	}
	return req, h, corr, nil
}

// clientIDOf returns the client id of a request frame that
// decodeRequest accepted.
func clientIDOf(frame []byte) string {
	n := int16(binary.BigEndian.Uint16(frame[8:]))
	if n <= 0 {
		return ""
	}
	return string(frame[10 : 10+int(n)])
}

// clientHost is the client's address as Kafka's DescribeGroups shows it.
func (c *conn) clientHost() string {
	host, _, err := net.SplitHostPort(c.remote)
	if err != nil {
		host = c.remote
	}
	return "/" + host
}

// skipTags skips a tagged-field section: a count, then for each field a
// tag, a size and that many bytes, all unsigned varints.
func skipTags(b []byte) ([]byte, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 {
		return nil, errors.New("bad tag count")
	}
	b = b[k:]
	for range n {
		if _, k = binary.Uvarint(b); k <= 0 {
			return nil, errors.New("bad tag")
		}
		b = b[k:]
		size, k := binary.Uvarint(b)
		if k <= 0 || size > uint64(len(b)-k) {
			return nil, errors.New("bad tag size")
		}
		b = b[k+int(size):]
	}
	return b, nil
}

// writeLoop answers the queued requests in order, batching responses
// into one write while more are ready.
func (c *conn) writeLoop(log *slog.Logger) {
	var buf []byte
	var charged int64 // queued.max.response.bytes held by what buf holds
	written := int32(0)
	failed := false
	for p := range c.queue {
		if failed {
			c.busy.Add(-1)
			continue // drain, so the reader never blocks
		}
		if p.wait != nil && !c.runWait(log, p.wait) {
			failed = true
			c.nc.Close()
			c.releaseResponse()
			c.releaseFiles()
			c.busy.Add(-1)
			continue
		}
		// A fetch response's records are written from where they were
		// read, or sent from their files, not copied into buf: buf is
		// written first, then they.
		var spliced []framePiece
		if fr, ok := p.resp.(*kmsg.FetchResponse); ok {
			spliced, _ = spliceFetch(p.corr, fr, p.flexHeader, c.fetchFiles)
		}
		switch {
		case p.raw != nil:
			buf = binary.BigEndian.AppendUint32(buf, uint32(len(p.raw)))
			buf = append(buf, p.raw...)
		case spliced == nil:
			buf = appendResponse(buf, p.corr, p.resp, p.flexHeader)
		}
		charged += c.respCharged
		c.respCharged = 0
		written++
		if spliced == nil && len(c.queue) > 0 && len(buf) < 1<<20 {
			continue
		}
		c.nc.SetWriteDeadline(time.Now().Add(c.s.o.RequestTimeout))
		err := writeFrame(c.nc, c.raw, append([]framePiece{{b: buf}}, spliced...), &c.s.fetchIO.sendfileBytes)
		c.releaseFiles()
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				c.s.limitHit(closeSlowReply, c.remote, "kafka: closing connection: a response was not read within the request timeout (--request-timeout)",
					"timeout", c.s.o.RequestTimeout, "bytes", len(buf))
			} else {
				log.Debug("kafka: write failed", "err", err)
			}
			failed = true
			c.nc.Close()
		}
		c.s.responseBytes.release(charged)
		charged = 0
		c.active()
		c.busy.Add(-written)
		written = 0
		buf = buf[:0]
		if cap(buf) > 64<<10 {
			buf = nil // do not keep a large response's memory per connection
		}
	}
	c.s.responseBytes.release(charged)
	c.releaseFiles()
	c.busy.Add(-written)
}

// releaseFiles lets go of the segments of the fetch response just
// written (or not to be written).
func (c *conn) releaseFiles() {
	for i := range c.fetchFiles {
		c.fetchFiles[i].chunk.Release()
		c.fetchFiles[i] = fileRecords{}
	}
	c.fetchFiles = c.fetchFiles[:0]
}

// runWait runs a reply's wait, reporting false if it panicked.
func (c *conn) runWait(log *slog.Logger, wait func(context.Context)) (ok bool) {
	defer func() {
		if r := recover(); r != nil {
			log.Error("kafka: handler panic", "panic", r, "stack", string(debug.Stack()))
			ok = false
		}
	}()
	wait(c.s.polls)
	return true
}

// appendResponse appends a response frame: size, correlation id, for
// flexible responses (other than ApiVersions) an empty tag section, and
// the body.
func appendResponse(dst []byte, corr int32, resp kmsg.Response, flexHeader bool) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = binary.BigEndian.AppendUint32(dst, uint32(corr))
	if flexHeader {
		dst = append(dst, 0)
	}
	dst = resp.AppendTo(dst)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}
