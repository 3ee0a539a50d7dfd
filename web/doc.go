// Package web is passbook's HTTP face: a JSON API, Server-Sent Events
// streams, Prometheus metrics, health checks and a live dashboard that
// draws every partition as a tape with every consumer's cursor on it.
//
//	db, _ := passbook.Open(dir, nil)
//	ws := web.NewServer(db, nil)    // an http.Handler
//	ln, _ := net.Listen("tcp", "127.0.0.1:8080")
//	go ws.Serve(ln)                 // with the Options' timeouts and connection cap
//	…
//	ws.Shutdown(ctx)                // end SSE streams and long polls, then the requests in progress
//	db.Close()
//
// `passbook serve --http ADDR` does this beside the Kafka server. Served
// as an http.Handler on an http.Server of one's own, the Server still
// caps its SSE streams (MaxStreams, MaxStreamsPerClient) but the
// timeouts and the connection cap are that http.Server's to set.
//
// # Limits
//
// limits.go bounds what a client can make the server spend: connections
// (the one idle longest makes room, else 503), timeouts for reading a
// request and writing an answer (a slow body is cut with 408), SSE
// streams in all (503) and per client (429, with long polls), each with a
// Retry-After, a metric and a log line a minute while it bites. An SSE
// stream costs one goroutine: it takes its connection over from net/http
// and bounds each write by Options.StreamWriteTimeout.
//
// # Routes
//
// docs/http-api.md shows each with curl; openapi.json (served at
// /api/openapi.json) describes them, and a test keeps it and the routes
// registered in NewServer the same.
//
//	/api/topics…                 topics; append (JSON or raw bytes); read, long poll; SSE tail
//	/api/consumers…              committed offsets, lag, commit, reset (consumer.Seek)
//	/api/events, /api/history    the dashboard's live stream and chart history
//	/metrics                     Prometheus, from a registry the Server owns (Registry)
//	/healthz, /readyz            liveness, readiness
//	/api/login, /api/whoami      the dashboard's sign-in (auth.go)
//	/                            the dashboard: static/, embedded
//
// Errors are {"error": {"code", "message", "details"}} with a stable code
// (the Code constants) and the HTTP status that goes with it: 400 for bad
// input, 404 unknown, 409 conflicts (a topic that exists, a consumer's
// lease held elsewhere), 413 too large, 415 wrong content type, and 416
// for an offset outside [log start, head].
//
// # Security
//
// guard.go is always on: a page of another origin reaches nothing
// through the user's browser (421 for a Host the server does not answer
// to, 403 for a write from another origin, 415 for a simple body without
// proof of our origin, no CORS unless Options.CORSOrigins). With
// Options.RequireAuth every /api request needs credentials (auth.go);
// with Options.Authorizer each endpoint asks Kafka's ACLs (authz.go).
// docs/http-api.md has the details and the endpoint → ACL table.
//
// # Files
//
//	server.go     Options, Server, Serve and Shutdown, the route table, JSON in and out
//	guard.go      browser safety: the Host check (DNS rebinding), cross-origin writes, simple bodies, CORS
//	auth.go       authentication: HTTP Basic, bearer tokens, the dashboard's sessions (login, logout, whoami)
//	authz.go      the ACLs each endpoint asks, the filters of lists and of the event stream
//	limits.go     the connection cap, the stream limits, their log lines
//	errors.go     the error codes; engine errors → codes and statuses
//	topics.go     topic endpoints
//	records.go    append, read and long poll; records as JSON
//	stream.go     Server-Sent Events; the partition tail
//	consumers.go  consumer endpoints
//	events.go     the hub: the dashboard's state, diffed and fanned out
//	history.go    per-second samples for the charts
//	metrics.go    the server's instruments and the scrape-time collector
//	fsync.go      SyncTimer: fsync latency, measured at the vfs seam
//	health.go     /healthz, /readyz
//	openapi.go    the embedded files
//	static/       the dashboard (plain ES modules, no build step;
//	              vendor/ holds uPlot 1.6.32's built files, MIT)
//
// # Dashboard
//
// The page opens /api/events: a snapshot of every partition's extent and
// every committed offset, then what changed, at most every
// Options.EventInterval (500 ms). One goroutine (the hub) computes the
// changes for all subscribers, so the cost of the page does not grow with
// the number of people looking at it; it reads the offset store only while
// someone is watching, and once a second for the history.
package web
