package web

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"path"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/acl"
	"github.com/passbook-log/passbook/auth"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Options configure a Server. A nil or zero Options is valid: every zero
// (or negative) field takes the default named in its comment.
type Options struct {
	// MaxBodyBytes bounds a request body; a bigger one is refused with
	// 413 body_too_large. Default 8 MiB.
	MaxBodyBytes int64
	// MaxAppendRecords bounds the records of one JSON append. Default 10,000.
	MaxAppendRecords int
	// MaxReadRecords bounds the limit of one read. Default 1,000.
	MaxReadRecords int
	// MaxReadBytes bounds the keys, values and headers of one read's
	// records; a read returns at least one record whatever its size.
	// Default 4 MiB.
	MaxReadBytes int
	// MaxWait bounds a long poll's ?wait. Default 60 s.
	MaxWait time.Duration
	// EventInterval is how often /api/events looks for changes to send
	// the dashboard: at most one update per interval. Default 500 ms.
	EventInterval time.Duration
	// HistoryWindow is how much per-second history of heads and lags the
	// server keeps for the dashboard's charts. Default 15 minutes.
	HistoryWindow time.Duration
	// Heartbeat is the interval of SSE comments that keep idle streams
	// open through proxies. Default 15 s.
	Heartbeat time.Duration
	// Registry is where the server registers its metrics, served at
	// /metrics. Default: a new registry with the Go and process
	// collectors. Either way Server.Registry returns it, for other
	// parts of the process (the Kafka server) to add theirs.
	Registry *prometheus.Registry
	// SyncTimer, if set, is the file system the DB was opened with; its
	// fsync latency histogram is served at /metrics.
	SyncTimer *SyncTimer
	// Logger receives the server's log lines. Default: discard.
	Logger *slog.Logger

	// The limits below bound what clients can make the server spend
	// (limits.go). The timeouts and MaxConnections apply when the server
	// serves its own listener (Serve); the stream limits always.

	// ReadHeaderTimeout bounds the time to read a request's headers; a
	// client slower than that has its connection closed. Default 10 s.
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds the time to read a whole request, body
	// included; a body still arriving then is cut and answered 408
	// request_timeout. SSE streams and long polls read nothing more once
	// they start and are not cut by it. Default 30 s.
	ReadTimeout time.Duration
	// WriteTimeout bounds the time from the end of a request's headers
	// to the end of its answer; a client that does not take its answer
	// in time has its connection closed. A long poll adds its wait; SSE
	// streams bound each write by StreamWriteTimeout instead. Default 30 s.
	WriteTimeout time.Duration
	// IdleTimeout closes a keep-alive connection idle that long between
	// requests. Default 2 minutes.
	IdleTimeout time.Duration
	// MaxHeaderBytes bounds a request's line and headers; more is
	// answered 431. Default 64 KiB.
	MaxHeaderBytes int
	// MaxConnections bounds the connections open at once; one more is
	// answered 503 too_many_connections (Retry-After) and closed.
	// Default 2,000.
	MaxConnections int
	// MaxStreams bounds the SSE streams (record streams and the
	// dashboard's /api/events) open at once; one more is answered 503
	// too_many_streams with Retry-After. Default 1,000.
	MaxStreams int
	// MaxStreamsPerClient bounds the SSE streams and long polls (reads
	// with ?wait) that one client, by remote IP, has open at once; one
	// more is answered 429 too_many_requests with Retry-After.
	// Default 100.
	MaxStreamsPerClient int
	// StreamWriteTimeout bounds each write of an SSE stream: a
	// subscriber that does not take an event (or a heartbeat) within it
	// is cut and counted. Default 10 s.
	StreamWriteTimeout time.Duration

	// Browser safety (guard.go) is always on; these widen it.

	// AllowedHosts are more host names the server answers to in the Host
	// header (a port, if given, is ignored), beside its listen address,
	// localhost, 127.0.0.1, ::1 and the machine's host name. A request
	// for any other host is answered 421 misdirected_request: that closes
	// DNS rebinding. "*" turns the check off (behind a proxy that checks
	// the Host itself).
	AllowedHosts []string
	// Advertise is the host:port clients are told to use; its host is
	// answered to.
	Advertise string
	// CORSOrigins are origins (https://app.example) whose pages may call
	// the API: they get Access-Control-Allow-Origin and their preflights
	// are answered. Default: none, and no CORS headers at all.
	CORSOrigins []string

	// Authentication and authorization (auth.go, authz.go).

	// TLS, if set, is the configuration Serve wraps its listener in
	// (HTTPS); requests then have r.TLS set and the session cookie is
	// Secure.
	TLS *tls.Config
	// Users are the users HTTP Basic and the dashboard's login check
	// passwords against.
	Users *auth.Users
	// Tokens are the bearer tokens the API accepts.
	Tokens *auth.Tokens
	// Authorizer enforces the ACLs; nil allows every principal
	// everything.
	Authorizer *acl.Authorizer
	// RequireAuth: every /api request but login, logout, whoami and
	// openapi.json needs credentials (401 unauthorized without).
	RequireAuth bool
	// MetricsAuth: /metrics needs credentials too, and DESCRIBE on the
	// cluster. Default: /metrics is open.
	MetricsAuth bool
}

const (
	defaultMaxBodyBytes     = 8 << 20
	defaultMaxAppendRecords = 10_000
	defaultMaxReadRecords   = 1_000
	defaultMaxReadBytes     = 4 << 20
	defaultMaxWait          = 60 * time.Second
	defaultEventInterval    = 500 * time.Millisecond
	defaultHistoryWindow    = 15 * time.Minute
	defaultHeartbeat        = 15 * time.Second

	defaultReadHeaderTimeout   = 10 * time.Second
	defaultReadTimeout         = 30 * time.Second
	defaultWriteTimeout        = 30 * time.Second
	defaultIdleTimeout         = 2 * time.Minute
	defaultMaxHeaderBytes      = 64 << 10
	defaultMaxConnections      = 2_000
	defaultMaxStreams          = 1_000
	defaultMaxStreamsPerClient = 100
	defaultStreamWriteTimeout  = 10 * time.Second
)

// Defaults returns a copy of o with every zero field set to its default.
func (o *Options) Defaults() Options { return o.withDefaults() }

func (o *Options) withDefaults() Options {
	var c Options
	if o != nil {
		c = *o
	}
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = defaultMaxBodyBytes
	}
	if c.MaxAppendRecords <= 0 {
		c.MaxAppendRecords = defaultMaxAppendRecords
	}
	if c.MaxReadRecords <= 0 {
		c.MaxReadRecords = defaultMaxReadRecords
	}
	if c.MaxReadBytes <= 0 {
		c.MaxReadBytes = defaultMaxReadBytes
	}
	if c.MaxWait <= 0 {
		c.MaxWait = defaultMaxWait
	}
	if c.EventInterval <= 0 {
		c.EventInterval = defaultEventInterval
	}
	if c.HistoryWindow <= 0 {
		c.HistoryWindow = defaultHistoryWindow
	}
	if c.Heartbeat <= 0 {
		c.Heartbeat = defaultHeartbeat
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	for _, d := range []struct {
		v   *time.Duration
		def time.Duration
	}{
		{&c.ReadHeaderTimeout, defaultReadHeaderTimeout},
		{&c.ReadTimeout, defaultReadTimeout},
		{&c.WriteTimeout, defaultWriteTimeout},
		{&c.IdleTimeout, defaultIdleTimeout},
		{&c.StreamWriteTimeout, defaultStreamWriteTimeout},
	} {
		if *d.v <= 0 {
			*d.v = d.def
		}
	}
	for _, n := range []struct {
		v   *int
		def int
	}{
		{&c.MaxHeaderBytes, defaultMaxHeaderBytes},
		{&c.MaxConnections, defaultMaxConnections},
		{&c.MaxStreams, defaultMaxStreams},
		{&c.MaxStreamsPerClient, defaultMaxStreamsPerClient},
	} {
		if *n.v <= 0 {
			*n.v = n.def
		}
	}
	return c
}

// Server is the HTTP face of a DB: the JSON API under /api/, Server-Sent
// Events streams, /metrics, /healthz, /readyz and the dashboard at /. It
// is an http.Handler; serve it with an http.Server. It does not own the
// DB. Close it before shutting the http.Server down: Close ends the
// streams and long polls, which Shutdown would otherwise wait for.
type Server struct {
	db     *passbook.DB
	o      Options
	log    *slog.Logger
	mux    *http.ServeMux
	routes []route
	reg    *prometheus.Registry
	m      *metrics
	hub    *hub
	limits *streamLimiter
	guard  *guard
	authn  *authn
	// decoded is the last dashboard event decoded for the ACL filters.
	decoded decodedEvent
	// The limits' log lines, at most one a minute each.
	connLog, evictLog, streamLog, clientLog, timeoutLog *limitLog

	// srv is the http.Server of Serve, for Shutdown.
	srvMu sync.Mutex
	srv   *http.Server

	// done is canceled by Close: streams and long polls end.
	done      context.Context
	cancel    context.CancelFunc
	closeOnce sync.Once
	closed    atomic.Bool
}

// route is one registered endpoint; the OpenAPI test checks the table
// against openapi.json.
type route struct {
	method, pattern string
}

// handlerFunc is an endpoint: an error it returns becomes the JSON error
// response (unless the handler has started its response).
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

// NewServer returns a Server for db. A nil opts means the defaults.
func NewServer(db *passbook.DB, opts *Options) *Server {
	o := opts.withDefaults()
	s := &Server{db: db, o: o, log: o.Logger, mux: http.NewServeMux(), reg: o.Registry}
	s.done, s.cancel = context.WithCancel(context.Background())
	if s.reg == nil {
		s.reg = prometheus.NewRegistry()
		s.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	s.m = newMetrics(s)
	s.limits = newStreamLimiter(s)
	s.guard = newGuard(s)
	s.authn = newAuthn(s)
	const refused = "refused_since_last_line"
	s.connLog = &limitLog{log: s.log, key: refused, msg: "http: connection limit reached; refusing connections with 503"}
	s.evictLog = &limitLog{log: s.log, key: "closed_since_last_line", msg: "http: connection limit reached; closing the connection idle longest for a new one"}
	s.streamLog = &limitLog{log: s.log, key: refused, msg: "http: SSE stream limit reached; refusing streams with 503"}
	s.clientLog = &limitLog{log: s.log, key: refused, msg: "http: a client reached its limit of streams and long polls; refusing with 429"}
	s.timeoutLog = &limitLog{log: s.log, key: "cut_since_last_line", msg: "http: request bodies cut by the read timeout; answered 408"}
	s.hub = newHub(s)

	s.handle("GET /api/topics", s.listTopics)
	s.handle("POST /api/topics", s.createTopic)
	s.handle("GET /api/topics/{topic}", s.describeTopic)
	s.handle("DELETE /api/topics/{topic}", s.deleteTopic)
	s.handle("POST /api/topics/{topic}/records", s.appendTopic)
	s.handle("GET /api/topics/{topic}/partitions/{partition}", s.describePartition)
	s.handle("POST /api/topics/{topic}/partitions/{partition}/records", s.appendPartition)
	s.handle("GET /api/topics/{topic}/partitions/{partition}/records", s.readRecords)
	s.handle("GET /api/topics/{topic}/partitions/{partition}/stream", s.streamRecords)
	s.handle("GET /api/consumers", s.listConsumers)
	s.handle("GET /api/consumers/{consumer}", s.describeConsumer)
	s.handle("GET /api/consumers/{consumer}/topics/{topic}", s.consumerLag)
	s.handle("POST /api/consumers/{consumer}/topics/{topic}/commit", s.commitOffsets)
	s.handle("POST /api/consumers/{consumer}/topics/{topic}/reset", s.resetOffsets)
	s.handle("GET /api/events", s.events)
	s.handle("GET /api/history", s.history)
	s.handle("GET /api/openapi.json", s.openAPI)
	s.handle("POST /api/login", s.login)
	s.handle("POST /api/logout", s.logout)
	s.handle("GET /api/whoami", s.whoami)
	s.handle("GET /healthz", s.healthz)
	s.handle("GET /readyz", s.readyz)
	s.routes = append(s.routes, route{"GET", "/metrics"})
	metricsHandler := promhttp.InstrumentMetricHandler(s.reg, promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{Registry: s.reg}))
	s.mux.Handle("GET /metrics", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := s.authorizeRoute("GET /metrics", r); err != nil {
			s.writeError(w, r, err)
			return
		}
		metricsHandler.ServeHTTP(w, r)
	}))

	// The dashboard: everything else that is not under /api/.
	static, _ := fs.Sub(staticFiles, "static")
	files := http.FileServerFS(static)
	s.mux.Handle("GET /", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" && strings.HasSuffix(r.URL.Path, "/") {
			http.NotFound(w, r) // no directory listings
			return
		}
		if name := strings.TrimPrefix(path.Clean(r.URL.Path), "/"); name != "" && !fs.ValidPath(name) {
			http.NotFound(w, r) // not UTF-8: FileServerFS would answer 500 (found by FuzzHTTP)
			return
		}
		w.Header().Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	}))
	return s
}

// handle registers h for pattern ("METHOD /path"), instrumented.
func (s *Server) handle(pattern string, h handlerFunc) {
	method, p, _ := strings.Cut(pattern, " ")
	s.routes = append(s.routes, route{method, p})
	s.mux.Handle(pattern, s.m.instrument(p, func(w http.ResponseWriter, r *http.Request) {
		err := s.authorizeRoute(pattern, r)
		if err == nil {
			err = h(w, r)
		}
		if err != nil {
			s.writeError(w, r, err)
		}
	}))
}

// ServeHTTP serves the API, metrics and the dashboard.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !s.guard.check(w, r) {
		return
	}
	r, ok := s.authn.authenticate(w, r)
	if !ok {
		return
	}
	if strings.HasPrefix(r.URL.Path, "/api/") || r.URL.Path == "/api" {
		if p := strings.TrimSuffix(r.URL.EscapedPath(), "/"); path.Clean(p) != p {
			// The mux would redirect to the cleaned path: an API refuses
			// instead, so "topics/../x" never reaches another resource.
			s.writeError(w, r, badRequest("the path %q has empty, '.' or '..' segments", p))
			return
		}
		if _, pattern := s.mux.Handler(r); pattern == "" || pattern == "GET /" {
			s.noRoute(w, r)
			return
		}
	}
	s.mux.ServeHTTP(w, r)
}

// noRoute answers an /api/ request that matches no route, in JSON: 405
// with Allow when the path exists for other methods, else 404.
func (s *Server) noRoute(w http.ResponseWriter, r *http.Request) {
	var allow []string
	for _, m := range []string{"GET", "POST", "PUT", "PATCH", "DELETE"} {
		if m == r.Method {
			continue
		}
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := s.mux.Handler(probe); pattern != "" && pattern != "GET /" {
			allow = append(allow, m)
		}
	}
	if len(allow) > 0 {
		w.Header().Set("Allow", strings.Join(allow, ", "))
		s.writeError(w, r, errorf(http.StatusMethodNotAllowed, CodeMethodNotAllowed, "%s %s is not allowed (allowed: %s)", r.Method, r.URL.Path, strings.Join(allow, ", ")))
		return
	}
	s.writeError(w, r, errorf(http.StatusNotFound, CodeNotFound, "no API endpoint %s %s (see /api/openapi.json)", r.Method, r.URL.Path))
}

// Serve accepts connections on ln and serves them with the Options'
// timeouts and connection limit, until Shutdown; it then returns
// http.ErrServerClosed. It may be called once.
func (s *Server) Serve(ln net.Listener) error {
	srv := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: s.o.ReadHeaderTimeout,
		ReadTimeout:       s.o.ReadTimeout,
		WriteTimeout:      s.o.WriteTimeout,
		IdleTimeout:       s.o.IdleTimeout,
		MaxHeaderBytes:    s.o.MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	s.guard.setListener(ln.Addr())
	cl := s.limitListener(ln)
	srv.ConnState = cl.connState
	s.srvMu.Lock()
	if s.srv != nil {
		s.srvMu.Unlock()
		return errors.New("web: Serve called twice")
	}
	s.srv = srv
	s.srvMu.Unlock()
	s.log.Info("http: limits", "read_header_timeout", s.o.ReadHeaderTimeout, "read_timeout", s.o.ReadTimeout,
		"write_timeout", s.o.WriteTimeout, "idle_timeout", s.o.IdleTimeout, "max_header_bytes", s.o.MaxHeaderBytes,
		"max_connections", s.o.MaxConnections, "max_streams", s.o.MaxStreams,
		"max_streams_per_client", s.o.MaxStreamsPerClient, "stream_write_timeout", s.o.StreamWriteTimeout)
	if s.o.TLS != nil {
		cfg := s.o.TLS.Clone()
		// HTTP/1.1 only: SSE streams take their connection over.
		cfg.NextProtos = []string{"http/1.1"}
		return srv.Serve(tls.NewListener(cl, cfg))
	}
	return srv.Serve(cl)
}

// Shutdown closes the server (Close) and then shuts down what Serve
// serves: no new connections, and the requests in progress finish
// until ctx is done (http.Server.Shutdown).
func (s *Server) Shutdown(ctx context.Context) error {
	s.Close()
	s.srvMu.Lock()
	srv := s.srv
	s.srvMu.Unlock()
	if srv == nil {
		return nil
	}
	return srv.Shutdown(ctx)
}

// Registry is the Prometheus registry served at /metrics. Other parts of
// the process (the Kafka server) may register their collectors in it.
func (s *Server) Registry() *prometheus.Registry { return s.reg }

// Close ends the server's streams and long polls and stops its
// background sampling. It does not close the DB. Handlers called after
// Close answer 503.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		s.cancel()
		s.hub.stop()
	})
	return nil
}

// writeJSON writes v as the JSON response with status.
func writeJSON(w http.ResponseWriter, status int, v any) error {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	ae := toAPIError(err)
	if ae.Code == CodeRequestTimeout {
		s.m.bodyTimeouts.Inc()
		s.timeoutLog.hit("timeout", s.o.ReadTimeout, "flag", "--http-read-timeout")
	}
	if ae.RetryAfter > 0 {
		// A refusal for load: the client comes back later, on a new
		// connection, rather than hold this one meanwhile.
		w.Header().Set("Retry-After", strconv.Itoa(ae.RetryAfter))
		w.Header().Set("Connection", "close")
	}
	if ae.Status >= 500 && ae.RetryAfter == 0 { // refusals for load are logged by their limitLog
		s.log.Error("http: request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	writeJSON(w, ae.Status, map[string]any{"error": ae})
}

// decodeJSON reads the request body as one JSON value into v, refusing
// other content types, unknown fields, trailing data and bodies over
// the limit.
func (s *Server) decodeJSON(w http.ResponseWriter, r *http.Request, v any) error {
	if err := requireContentType(r, "application/json"); err != nil {
		return err
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, s.o.MaxBodyBytes))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		if err != nil {
			return jsonError(err)
		}
		return errorf(http.StatusBadRequest, CodeMalformedJSON, "the body holds more than one JSON value")
	}
	return nil
}

func jsonError(err error) error {
	var mbe *http.MaxBytesError
	var ne net.Error
	if errors.As(err, &mbe) || errors.As(err, &ne) && ne.Timeout() {
		return err // 413, or 408 for a body cut by the read timeout
	}
	if errors.Is(err, io.EOF) {
		return errorf(http.StatusBadRequest, CodeMalformedJSON, "the body is empty; it must be a JSON object")
	}
	return errorf(http.StatusBadRequest, CodeMalformedJSON, "the body is not valid JSON for this endpoint: %s", err)
}

// requireContentType refuses a request whose body is not of media type want.
func requireContentType(r *http.Request, want ...string) error {
	ct := r.Header.Get("Content-Type")
	mt, _, err := mime.ParseMediaType(ct)
	if err == nil {
		for _, w := range want {
			if mt == w {
				return nil
			}
		}
	}
	if ct == "" {
		ct = "none"
	}
	return errorf(http.StatusUnsupportedMediaType, CodeUnsupportedMedia, "Content-Type %s; want %s", ct, strings.Join(want, " or "))
}

// topic looks up the {topic} path value.
func (s *Server) topic(r *http.Request) (*passbook.Topic, error) {
	if s.closed.Load() {
		return nil, passbook.ErrClosed
	}
	return s.db.Topic(r.PathValue("topic"))
}
