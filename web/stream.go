package web

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/passbook-log/passbook/storage"
)

// sse writes Server-Sent Events. Each write must be taken by the client
// within Options.StreamWriteTimeout: a stream outlives any deadline for
// the whole answer, but not a subscriber that stopped reading.
//
// A stream costs one goroutine, the handler's: it takes the connection
// over from net/http (Hijack), which would otherwise keep a second one
// reading it to notice the client leave. The stream notices instead when
// it next writes (an event or a heartbeat), and checks for the client's
// close before each heartbeat. Where the connection cannot be taken over
// (HTTP/2), it is written through the ResponseWriter.
type sse struct {
	w       io.Writer
	timeout time.Duration

	// conn and bw, when the connection was taken over; else rc.
	conn net.Conn
	bw   *bufio.Writer
	rc   *http.ResponseController
	ctx  context.Context // the request's, when not taken over

	wrote time.Time // the last write's deadline was set
}

// clientCheckInterval is how often a stream waiting for records looks
// whether its client has left, to give its place back.
const clientCheckInterval = time.Second

// startSSE answers with the event-stream headers. The stream must be
// ended with end.
func (s *Server) startSSE(w http.ResponseWriter, r *http.Request, retry time.Duration) (*sse, error) {
	e := &sse{timeout: s.o.StreamWriteTimeout, rc: http.NewResponseController(w), ctx: r.Context()}
	if r.ProtoMajor == 1 {
		if conn, brw, err := e.rc.Hijack(); err == nil {
			e.conn, e.bw, e.w = conn, brw.Writer, brw.Writer
			// Nothing more is read; the http.Server's deadlines are
			// for ordinary requests.
			conn.SetReadDeadline(time.Time{})
			e.deadline()
			_, err := io.WriteString(e.bw, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-store\r\n"+
				"X-Accel-Buffering: no\r\nConnection: close\r\n\r\n"+
				"retry: "+strconv.FormatInt(retry.Milliseconds(), 10)+"\n\n")
			if err != nil {
				e.end()
				return nil, err
			}
			if err := e.flush(); err != nil {
				e.end()
				return nil, err
			}
			return e, nil
		}
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	w.WriteHeader(http.StatusOK)
	e.w = w
	// Nothing more is read: the http.Server's ReadTimeout, which would
	// end the stream (its context) when it passes, does not apply.
	e.rc.SetReadDeadline(time.Time{})
	e.deadline()
	if _, err := fmt.Fprintf(w, "retry: %d\n\n", retry.Milliseconds()); err != nil {
		return nil, err
	}
	return e, e.flush()
}

// end closes a connection taken over, after what is buffered.
func (e *sse) end() {
	if e.conn != nil {
		e.bw.Flush()
		e.conn.Close()
	}
}

// deadline gives the next write StreamWriteTimeout.
func (e *sse) deadline() {
	e.wrote = time.Now()
	t := e.wrote.Add(e.timeout)
	if e.conn != nil {
		e.conn.SetWriteDeadline(t)
		return
	}
	e.rc.SetWriteDeadline(t)
}

// gone reports whether the client has closed its end (or sent what it
// should not), without waiting.
func (e *sse) gone() bool {
	if e.conn == nil {
		return e.ctx.Err() != nil
	}
	// A deadline already passed would fail the read without trying it.
	e.conn.SetReadDeadline(time.Now().Add(time.Millisecond))
	var b [1]byte
	_, err := e.conn.Read(b[:])
	var ne net.Error
	return !(errors.As(err, &ne) && ne.Timeout())
}

// event writes one event; data must be one line (compact JSON is).
func (e *sse) event(id, name string, data []byte) error {
	var b strings.Builder
	if id != "" {
		b.WriteString("id: " + id + "\n")
	}
	b.WriteString("event: " + name + "\ndata: ")
	b.Write(data)
	b.WriteString("\n\n")
	e.deadline()
	_, err := io.WriteString(e.w, b.String())
	return err
}

// heartbeat writes a comment that keeps the stream open through proxies.
// Its callers ask gone() first: asking again here would cost a second
// read of up to a millisecond.
func (e *sse) heartbeat() error {
	e.deadline()
	_, err := io.WriteString(e.w, ": keepalive\n\n")
	if err == nil {
		err = e.flush()
	}
	return err
}

func (e *sse) flush() error {
	if e.conn != nil {
		return e.bw.Flush()
	}
	return e.rc.Flush()
}

// streamEnded counts a stream that ended on err because its subscriber
// did not take a write in time.
func (s *Server) streamEnded(err error) {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		s.m.streamsDropped.WithLabelValues("write_timeout").Inc()
	}
}

// GET /api/topics/{topic}/partitions/{partition}/stream
//
// Each record is an event "record" whose id is its offset. A client that
// reconnects with Last-Event-ID: N resumes at N+1, so it misses nothing
// and sees nothing twice; without it, ?from= says where to start
// (default latest: only new records).
func (s *Server) streamRecords(w http.ResponseWriter, r *http.Request) error {
	t, p, l, err := s.partition(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	enc, err := parseEncoding(q.Get("encoding"))
	if err != nil {
		return err
	}
	var from int64
	if id := r.Header.Get("Last-Event-ID"); id != "" {
		n, err := strconv.ParseInt(id, 10, 64)
		if err != nil || n < -1 {
			return badRequest("Last-Event-ID %q: want the offset of the last record received", id)
		}
		from = n + 1
	} else {
		v := q.Get("from")
		if v == "" {
			v = "latest"
		}
		if from, err = parseOffset(v, l); err != nil {
			return err
		}
	}
	if start, head := l.StartOffset(), l.Head(); from < start || from > head {
		return &storage.OutOfRangeError{Offset: from, Start: start, Head: head}
	}

	release, err := s.limits.acquire(r, true)
	if err != nil {
		return err
	}
	defer release()
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	stop := context.AfterFunc(s.done, cancel)
	defer stop()
	out, err := s.startSSE(w, r, 2*time.Second)
	if err != nil {
		s.streamEnded(err)
		return nil
	}
	defer out.end()
	s.m.streams.Inc()
	defer s.m.streams.Dec()
	reads := s.m.readRecords.WithLabelValues(t.Name())
	readBytes := s.m.readBytes.WithLabelValues(t.Name())

	rd := l.NewReader(from)
	defer rd.Close()
	pending := 0 // events written since the last flush
	for {
		rec, ok, err := rd.TryNext()
		if err != nil {
			b, _ := json.Marshal(map[string]any{"error": toAPIError(err)})
			out.event("", "error", b)
			out.flush()
			return nil
		}
		if ok {
			b, _ := json.Marshal(toRecordOut(p, rec, enc))
			if err := out.event(strconv.FormatInt(rec.Offset, 10), "record", b); err != nil {
				s.streamEnded(err)
				return nil // the client went away, or too slow
			}
			reads.Inc()
			readBytes.Add(float64(recordBytes(rec)))
			if pending++; pending < 256 {
				continue
			}
		}
		if err := out.flush(); err != nil {
			s.streamEnded(err)
			return nil
		}
		pending = 0
		if ok {
			continue
		}
		// At the head: wait for a record, looking every second whether
		// the client has left, with a heartbeat now and then.
		wctx, wcancel := context.WithTimeout(ctx, min(s.o.Heartbeat, clientCheckInterval))
		err = l.Wait(wctx, rd.Offset())
		wcancel()
		switch {
		case ctx.Err() != nil:
			return nil
		case err == context.DeadlineExceeded:
			if out.gone() {
				return nil
			}
			if time.Since(out.wrote) < s.o.Heartbeat {
				continue
			}
			if err := out.heartbeat(); err != nil {
				s.streamEnded(err)
				return nil
			}
		case err != nil:
			b, _ := json.Marshal(map[string]any{"error": toAPIError(err)})
			out.event("", "error", b)
			out.flush()
			return nil
		}
	}
}
