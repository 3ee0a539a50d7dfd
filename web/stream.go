package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
type sse struct {
	w       io.Writer
	rc      *http.ResponseController
	timeout time.Duration
}

// startSSE answers with the event-stream headers.
func (s *Server) startSSE(w http.ResponseWriter, retry time.Duration) (*sse, error) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	w.WriteHeader(http.StatusOK)
	e := &sse{w: w, rc: http.NewResponseController(w), timeout: s.o.StreamWriteTimeout}
	// Nothing more is read: the http.Server's ReadTimeout, which would
	// end the stream (its context) when it passes, does not apply.
	e.rc.SetReadDeadline(time.Time{})
	e.deadline()
	if _, err := fmt.Fprintf(w, "retry: %d\n\n", retry.Milliseconds()); err != nil {
		return nil, err
	}
	return e, e.flush()
}

// deadline gives the next write StreamWriteTimeout.
func (e *sse) deadline() { e.rc.SetWriteDeadline(time.Now().Add(e.timeout)) }

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

func (e *sse) comment(text string) error {
	e.deadline()
	_, err := io.WriteString(e.w, ": "+text+"\n\n")
	if err == nil {
		err = e.flush()
	}
	return err
}

func (e *sse) flush() error { return e.rc.Flush() }

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
	out, err := s.startSSE(w, 2*time.Second)
	if err != nil {
		s.streamEnded(err)
		return nil
	}
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
		// At the head: wait for a record, with a heartbeat now and then.
		wctx, wcancel := context.WithTimeout(ctx, s.o.Heartbeat)
		err = l.Wait(wctx, rd.Offset())
		wcancel()
		switch {
		case ctx.Err() != nil:
			return nil
		case err == context.DeadlineExceeded:
			if err := out.comment("keepalive"); err != nil {
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
