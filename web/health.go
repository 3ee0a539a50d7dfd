package web

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/offsets"
)

// GET /healthz: the process is up and serving HTTP.
func (s *Server) healthz(w http.ResponseWriter, r *http.Request) error {
	return writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// GET /readyz: the server can take requests: it is not closing, the DB is
// open, the offset store answers a query, and every partition is open and
// takes appends. A partition fenced at Open (it could not be opened) or
// refusing appends after a failed write makes it 503 with
// {"status":"degraded","partitions":[{"topic","partition","state","reason","since","retrying"}…]}.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) error {
	if s.closed.Load() {
		return errorf(http.StatusServiceUnavailable, CodeUnavailable, "the server is shutting down")
	}
	// Topic checks for a closed DB before it looks at the name.
	if _, err := s.db.Topic(""); errors.Is(err, passbook.ErrClosed) {
		return errorf(http.StatusServiceUnavailable, CodeUnavailable, "the database is closed")
	}
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if _, err := s.db.Offsets().List(ctx, offsets.Filter{Consumer: "\x00readyz"}); err != nil {
		return errorf(http.StatusServiceUnavailable, CodeUnavailable, "the offset store does not answer: %s", err)
	}
	if probs := s.db.PartitionProblems(); len(probs) > 0 {
		// The server serves, but not everything: a load balancer or an
		// operator should know which partitions, and why.
		return writeJSON(w, http.StatusServiceUnavailable, map[string]any{
			"status": "degraded", "topics": len(s.db.Topics()), "partitions": probs,
		})
	}
	return writeJSON(w, http.StatusOK, map[string]any{"status": "ready", "topics": len(s.db.Topics())})
}
