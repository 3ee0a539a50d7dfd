package main

import (
	"context"
	"log/slog"
	"net"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/web"
	"github.com/spf13/pflag"
)

// httpFlags are serve's limits of the HTTP API (web.Options; defaults
// there, shown in --help).
func httpFlags(f *pflag.FlagSet, o *web.Options) {
	d := (&web.Options{}).Defaults()
	f.DurationVar(&o.ReadHeaderTimeout, "http-read-header-timeout", d.ReadHeaderTimeout, "HTTP: close a connection whose request headers take longer to arrive")
	f.DurationVar(&o.ReadTimeout, "http-read-timeout", d.ReadTimeout, "HTTP: cut a request (headers and body) that takes longer to arrive; answered 408")
	f.DurationVar(&o.WriteTimeout, "http-write-timeout", d.WriteTimeout, "HTTP: close a connection whose answer takes longer to be taken (long polls add their wait; SSE streams use --http-stream-write-timeout)")
	f.DurationVar(&o.IdleTimeout, "http-idle-timeout", d.IdleTimeout, "HTTP: close a keep-alive connection idle that long")
	f.IntVar(&o.MaxHeaderBytes, "http-max-header-bytes", d.MaxHeaderBytes, "HTTP: largest request line and headers; more is answered 431")
	f.IntVar(&o.MaxConnections, "http-max-connections", d.MaxConnections, "HTTP: most connections open at once; at the limit a new one takes the place of the one idle longest (1 s or more), else it is answered 503 and closed")
	f.IntVar(&o.MaxStreams, "http-max-streams", d.MaxStreams, "HTTP: most SSE streams (record streams, the dashboard's /api/events) open at once; more are answered 503")
	f.IntVar(&o.MaxStreamsPerClient, "http-max-streams-per-client", d.MaxStreamsPerClient, "HTTP: most SSE streams and long polls one client (IP address) has open at once; more are answered 429")
	f.DurationVar(&o.StreamWriteTimeout, "http-stream-write-timeout", d.StreamWriteTimeout, "HTTP: cut an SSE subscriber that does not take a write within this")
}

// httpService is `passbook serve --http ADDR`: the JSON API under /api/,
// the dashboard at /, /metrics, /healthz and /readyz (package web), with
// the limits of opts. timer is the file system db was opened with, for
// the fsync latency metric. Other services may add their metrics to the
// web.Server's Registry. Shutting it down first ends the SSE streams and
// long polls, which would otherwise hold the graceful shutdown for its
// whole timeout.
func httpService(db *passbook.DB, addr string, opts web.Options, timer *web.SyncTimer, log *slog.Logger) (service, *web.Server) {
	opts.SyncTimer, opts.Logger = timer, log
	ws := web.NewServer(db, &opts)
	return service{
		name: "http",
		addr: addr,
		serve: func(_ context.Context, ln net.Listener) error {
			scheme := "http"
			if opts.TLS != nil {
				scheme = "https"
			}
			log.Info("http: serving the dashboard, the API and /metrics", "url", scheme+"://"+ln.Addr().String()+"/")
			return ws.Serve(ln)
		},
		shutdown: ws.Shutdown,
	}, ws
}
