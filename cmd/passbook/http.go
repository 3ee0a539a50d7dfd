package main

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/web"
)

// httpService is `passbook serve --http ADDR`: the JSON API under /api/,
// the dashboard at /, /metrics, /healthz and /readyz (package web). timer
// is the file system db was opened with, for the fsync latency metric.
// Other services may add their metrics to the web.Server's Registry.
// Shutting it down first ends the SSE streams and long polls, which would
// otherwise hold the graceful shutdown for its whole timeout.
func httpService(db *passbook.DB, addr string, timer *web.SyncTimer, log *slog.Logger) (service, *web.Server) {
	ws := web.NewServer(db, &web.Options{SyncTimer: timer, Logger: log})
	srv := &http.Server{
		Handler:           ws,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	return service{
		name: "http",
		addr: addr,
		serve: func(_ context.Context, ln net.Listener) error {
			log.Info("http: serving the dashboard, the API and /metrics", "url", "http://"+ln.Addr().String()+"/")
			return srv.Serve(ln)
		},
		shutdown: func(ctx context.Context) error {
			ws.Close()
			return srv.Shutdown(ctx)
		},
	}, ws
}
