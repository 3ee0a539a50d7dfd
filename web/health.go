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
// open and the offset store answers a query.
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
	return writeJSON(w, http.StatusOK, map[string]any{"status": "ready", "topics": len(s.db.Topics())})
}
