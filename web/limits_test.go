package web

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/passbook-log/passbook"
	dto "github.com/prometheus/client_model/go"
)

// The hostile-client cases of the HTTP API, in-process with the server on
// its own listener (Server.Serve, as `passbook serve --http` runs it);
// cmd/passbook's TestServe_HTTP_HostileClients runs them through the
// built binary and measures its RSS and fds. Each case is bounded (a few
// seconds, loopback) and checks that a normal client keeps appending and
// reading meanwhile.

// newServedEnv is newEnv, but served by Server.Serve on 127.0.0.1 with
// the Options' timeouts and connection limit.
func newServedEnv(t *testing.T, opts *Options) *env {
	t.Helper()
	db, err := passbook.Open(t.TempDir(), &passbook.Options{MinSegmentBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if opts.EventInterval == 0 {
		opts.EventInterval = 50 * time.Millisecond
	}
	s := NewServer(db, opts)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s.Shutdown(ctx)
		if err := <-served; err != http.ErrServerClosed {
			t.Errorf("Serve: %v", err)
		}
	})
	return &env{t: t, db: db, s: s, url: "http://" + ln.Addr().String()}
}

// normalClient appends one record to orders and reads it back through
// the API, as a well-behaved client does while others misbehave.
func normalClient(t *testing.T, e *env, i int) {
	t.Helper()
	c := &http.Client{Timeout: 10 * time.Second}
	body := fmt.Sprintf(`{"records":[{"value":"normal %d"}]}`, i)
	res, err := c.Post(e.url+"/api/topics/orders/partitions/0/records", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("normal client: append: %v", err)
	}
	var ap struct {
		Offsets []position `json:"offsets"`
	}
	json.NewDecoder(res.Body).Decode(&ap)
	res.Body.Close()
	if res.StatusCode != 200 || len(ap.Offsets) != 1 {
		t.Fatalf("normal client: append: %d %v", res.StatusCode, ap)
	}
	res, err = c.Get(fmt.Sprintf("%s/api/topics/orders/partitions/0/records?offset=%d&limit=1", e.url, ap.Offsets[0].Offset))
	if err != nil {
		t.Fatalf("normal client: read: %v", err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.Contains(string(b), fmt.Sprintf("normal %d", i)) {
		t.Fatalf("normal client: read: %d %s", res.StatusCode, b)
	}
}

// rawResponse is the status and headers of an answer read off a raw
// connection.
type rawResponse struct {
	status int
	header http.Header
	body   string
}

// readRaw reads one answer's status line and headers off br, and its
// body unless it is an event stream.
func readRaw(br *bufio.Reader, req *http.Request) (rawResponse, error) {
	res, err := http.ReadResponse(br, req)
	if err != nil {
		return rawResponse{}, err
	}
	r := rawResponse{status: res.StatusCode, header: res.Header}
	if res.Header.Get("Content-Type") != "text/event-stream" {
		b, _ := io.ReadAll(res.Body)
		r.body = string(b)
	}
	return r, nil
}

func (r rawResponse) errorCode() string { return response{body: []byte(r.body)}.errorCode() }

// TestServer_Limits_SSEFlood: 2,000 SSE subscribers against a limit of
// 100: 100 streams open, the other 1,900 are answered 503
// too_many_streams with Retry-After at once, the server's goroutines stay
// within a budget, and a normal client appends and reads meanwhile.
func TestServer_Limits_SSEFlood(t *testing.T) {
	const subscribers, limit = 2_000, 100
	e := newServedEnv(t, &Options{MaxStreams: limit, MaxStreamsPerClient: subscribers, MaxConnections: subscribers + 100})
	e.createTopic("orders", 1)
	base := runtime.NumGoroutine()

	conns := make([]net.Conn, 0, subscribers)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	deadline := time.Now().Add(20 * time.Second)
	for i := range subscribers {
		c, err := net.Dial("tcp", strings.TrimPrefix(e.url, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		c.SetDeadline(deadline)
		path := "/api/events"
		if i%2 == 1 {
			path = "/api/topics/orders/partitions/0/stream"
		}
		fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: localhost\r\n\r\n", path)
	}
	codes := map[int]int{}
	for i, c := range conns {
		r, err := readRaw(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("subscriber %d: %v", i, err)
		}
		codes[r.status]++
		if r.status == http.StatusServiceUnavailable {
			if r.errorCode() != CodeTooManyStreams || r.header.Get("Retry-After") == "" {
				t.Fatalf("subscriber %d: 503 %q, Retry-After %q; want too_many_streams with Retry-After", i, r.body, r.header.Get("Retry-After"))
			}
			c.Close()
		}
		if i%500 == 0 {
			normalClient(t, e, i)
		}
	}
	if codes[200] != limit || codes[503] != subscribers-limit {
		t.Fatalf("answers %v, want %d × 200 and %d × 503", codes, limit, subscribers-limit)
	}
	if got := e.metric("passbook_http_sse_refused_total"); got != subscribers-limit {
		t.Errorf("passbook_http_sse_refused_total %v, want %d", got, subscribers-limit)
	}
	// One goroutine a stream open (it took its connection over from
	// net/http, which would keep a second reading it), plus slack; the
	// refused ones none.
	budget := base + limit + 50
	var n int
	for end := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if n = runtime.NumGoroutine(); n <= budget || time.Now().After(end) {
			break
		}
	}
	if n > budget {
		t.Errorf("%d goroutines with %d streams open, want at most %d", n, limit, budget)
	}
	for i := range 10 {
		normalClient(t, e, subscribers+i)
	}
}

// TestServer_Limits_StreamsPerClient: one client may hold
// MaxStreamsPerClient streams and long polls; one more is answered 429
// too_many_requests with Retry-After, and its place comes back when one
// closes.
func TestServer_Limits_StreamsPerClient(t *testing.T) {
	e := newServedEnv(t, &Options{MaxStreamsPerClient: 3})
	e.createTopic("orders", 1)
	streams := []*sseClient{
		e.openSSE("/api/events", nil),
		e.openSSE("/api/topics/orders/partitions/0/stream", nil),
		e.openSSE("/api/events", nil),
	}
	for _, path := range []string{"/api/events", "/api/topics/orders/partitions/0/stream", "/api/topics/orders/partitions/0/records?offset=latest&wait=5s"} {
		r := e.get(path)
		e.want(r, http.StatusTooManyRequests, CodeTooManyRequests)
		if r.header.Get("Retry-After") == "" {
			t.Errorf("GET %s: 429 without Retry-After", path)
		}
	}
	if got := e.metric("passbook_http_throttled_total"); got != 3 {
		t.Errorf("passbook_http_throttled_total %v, want 3", got)
	}
	normalClient(t, e, 0) // appends and plain reads are not limited
	streams[0].close()
	for end := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		r := e.get("/api/topics/orders/partitions/0/records?offset=0&wait=1ms")
		if r.status == 200 {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("a closed stream's place did not come back: %d %s", r.status, r.body)
		}
	}
}

// TestServer_Limits_SlowBody: 500 POSTs whose bodies arrive a byte at a
// time are cut at the read timeout (408 request_timeout, or closed), and
// a normal client keeps working meanwhile.
func TestServer_Limits_SlowBody(t *testing.T) {
	const clients = 500
	e := newServedEnv(t, &Options{ReadTimeout: time.Second})
	e.createTopic("orders", 1)
	start := time.Now()
	var wg sync.WaitGroup
	var mu sync.Mutex
	cut, answered408 := 0, 0
	stop := make(chan struct{})
	for range clients {
		c, err := net.Dial("tcp", strings.TrimPrefix(e.url, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "POST /api/topics/orders/records HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{")
		wg.Add(2)
		go func() { // a byte every 300 ms until cut
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				case <-time.After(300 * time.Millisecond):
				}
				if _, err := c.Write([]byte(" ")); err != nil {
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			c.SetReadDeadline(time.Now().Add(15 * time.Second))
			r, err := readRaw(bufio.NewReader(c), nil)
			if err == nil {
				// The answer came: the connection then closes.
				_, err = c.Read(make([]byte, 1))
			}
			mu.Lock()
			defer mu.Unlock()
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				return // not cut within 15 s
			}
			cut++
			if r.status == http.StatusRequestTimeout && r.errorCode() == CodeRequestTimeout {
				answered408++
			}
		}()
	}
	for i := range 5 {
		normalClient(t, e, i)
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
	}
	close(stop)
	<-done
	if cut != clients {
		t.Fatalf("%d of %d slow bodies cut within 15 s (read timeout 1 s)", cut, clients)
	}
	if answered408 == 0 {
		t.Errorf("no slow body was answered 408 request_timeout")
	}
	if got := e.metric("passbook_http_request_timeouts_total"); int(got) != answered408 {
		t.Errorf("passbook_http_request_timeouts_total %v, want %d (the 408s)", got, answered408)
	}
	t.Logf("%d slow bodies cut in %v, %d of them answered 408", cut, time.Since(start).Round(time.Millisecond), answered408)
	normalClient(t, e, 99)
}

// TestServer_Limits_Connections: at MaxConnections a new connection
// takes the place of one idle for a second or more (between requests, or
// not done sending its headers); with none, it is answered 503
// too_many_connections and closed.
func TestServer_Limits_Connections(t *testing.T) {
	const limit = 5
	e := newServedEnv(t, &Options{MaxConnections: limit})
	e.createTopic("orders", 1)
	addr := strings.TrimPrefix(e.url, "http://")
	// Four connections with a request in progress (long polls: never
	// evicted), and one between requests.
	const longPoll = "GET /api/topics/orders/partitions/0/records?offset=latest&wait=30s HTTP/1.1\r\nHost: localhost\r\n\r\n"
	for range limit - 1 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprint(c, longPoll)
	}
	idle, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	idle.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(idle)
	fmt.Fprintf(idle, "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
	if r, err := readRaw(br, nil); err != nil || r.status != 200 {
		t.Fatalf("idle connection's request: %v %d", err, r.status)
	}
	waitFor(t, "5 connections counted", func() bool { return e.metric("passbook_http_connections") == limit })

	// The idle one has been idle a second: a new connection takes its place.
	time.Sleep(1100 * time.Millisecond)
	normalClient(t, e, 0)
	if _, err := br.ReadByte(); err != io.EOF {
		t.Fatalf("the connection idle longest: read %v, want EOF (closed for a new one)", err)
	}
	if got := e.metric("passbook_http_connections_evicted_total"); got != 1 {
		t.Errorf("passbook_http_connections_evicted_total %v, want 1", got)
	}

	// Now every connection is busy, or idle for less than a second (the
	// normal client's, which it closes): one more is refused.
	http.DefaultClient.CloseIdleConnections()
	waitFor(t, "the normal client's connection closed", func() bool { return e.metric("passbook_http_connections") == limit-1 })
	busy, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	fmt.Fprint(busy, longPoll)
	waitFor(t, "5 connections counted", func() bool { return e.metric("passbook_http_connections") == limit })
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
	r, err := readRaw(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.status != http.StatusServiceUnavailable || r.errorCode() != CodeTooManyConnections || r.header.Get("Retry-After") == "" {
		t.Fatalf("connection %d: %d %s (Retry-After %q); want 503 too_many_connections with Retry-After", limit+1, r.status, r.body, r.header.Get("Retry-After"))
	}
	if got := e.metric("passbook_http_connections_refused_total"); got != 1 {
		t.Errorf("passbook_http_connections_refused_total %v, want 1", got)
	}
}

// TestServer_Limits_IdleTimeout: a keep-alive connection idle for
// IdleTimeout is closed.
func TestServer_Limits_IdleTimeout(t *testing.T) {
	e := newServedEnv(t, &Options{IdleTimeout: 300 * time.Millisecond})
	c, err := net.Dial("tcp", strings.TrimPrefix(e.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	br := bufio.NewReader(c)
	fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
	if r, err := readRaw(br, nil); err != nil || r.status != 200 {
		t.Fatalf("request: %v %d", err, r.status)
	}
	if _, err := br.ReadByte(); err != io.EOF {
		t.Fatalf("idle connection: read %v, want EOF (closed after the idle timeout)", err)
	}
	waitFor(t, "the idle connection's place freed", func() bool { return e.metric("passbook_http_connections") == 0 })
}

// TestServer_Limits_StreamsOutliveTimeouts: SSE streams and long polls
// are not cut by the read and write timeouts of ordinary requests; a
// stream whose subscriber stops reading is cut by StreamWriteTimeout and
// counted, and appends go on meanwhile.
func TestServer_Limits_StreamsOutliveTimeouts(t *testing.T) {
	const timeout = 500 * time.Millisecond
	e := newServedEnv(t, &Options{ReadTimeout: timeout, WriteTimeout: timeout, StreamWriteTimeout: timeout})
	topic := e.createTopic("orders", 1)
	stream := e.openSSE("/api/topics/orders/partitions/0/stream?from=earliest", nil)
	time.Sleep(3 * timeout) // past both timeouts
	fill(t, topic, 0, 1)
	if ev := stream.next(t, 5*time.Second); ev.name != "record" || ev.id != "0" {
		t.Fatalf("after the timeouts: event %+v, want record 0", ev)
	}
	appended := make(chan error, 1)
	go func() {
		time.Sleep(3 * timeout)
		_, err := topic.AppendTo(0, []passbook.Record{{Value: []byte("late")}}, 0)
		appended <- err
	}()
	r := e.get("/api/topics/orders/partitions/0/records?offset=1&wait=10s")
	if err := <-appended; err != nil {
		t.Fatal(err)
	}
	if r.status != 200 || !strings.Contains(string(r.body), `"offset":1`) {
		t.Fatalf("long poll past the write timeout: %d %s", r.status, r.body)
	}

	// A subscriber that reads nothing, on a partition with megabytes to
	// send: its writes stop being taken, and it is cut.
	big := make([]passbook.Record, 1_000)
	for i := range big {
		big[i].Value = []byte(strings.Repeat("x", 1<<10))
	}
	for range 20 { // 20 MiB, more than the sockets' buffers
		if _, err := topic.AppendTo(0, big, 0); err != nil {
			t.Fatal(err)
		}
	}
	c, err := net.Dial("tcp", strings.TrimPrefix(e.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.(*net.TCPConn).SetReadBuffer(4 << 10)
	fmt.Fprintf(c, "GET /api/topics/orders/partitions/0/stream?from=earliest HTTP/1.1\r\nHost: localhost\r\n\r\n")
	waitFor(t, "the stalled subscriber cut", func() bool {
		fill(t, topic, 0, 1) // appends go on meanwhile
		return e.metric("passbook_http_sse_dropped_total", "reason=write_timeout") == 1
	})
}

// TestServer_Limits_MaxHeaderBytes: headers over MaxHeaderBytes are
// answered 431.
func TestServer_Limits_MaxHeaderBytes(t *testing.T) {
	e := newServedEnv(t, &Options{MaxHeaderBytes: 8 << 10})
	for _, tc := range []struct {
		size int
		want int
	}{{1 << 10, 200}, {64 << 10, http.StatusRequestHeaderFieldsTooLarge}} {
		req, _ := http.NewRequest("GET", e.url+"/healthz", nil)
		req.Header.Set("X-Padding", strings.Repeat("a", tc.size))
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != tc.want {
			t.Errorf("a %d-byte header: %d, want %d", tc.size, res.StatusCode, tc.want)
		}
	}
}

// waitFor polls cond for up to a minute. The bound only says when to
// give up waiting for something that must happen: a machine at ten times
// its cores' load (the race detector, other tests) once took longer than
// 10 s to cut a stalled subscriber.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(time.Minute); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("not within a minute: %s", what)
		}
	}
}

// metric is the value of a series as /metrics serves it, gathered from
// the registry directly (a scrape would take a connection).
func (e *env) metric(name string, labels ...string) float64 {
	e.t.Helper()
	fams, err := e.s.Registry().Gather()
	if err != nil {
		e.t.Fatal(err)
	}
	byName := map[string]*dto.MetricFamily{}
	for _, f := range fams {
		byName[f.GetName()] = f
	}
	v, ok := value(byName, name, labels...)
	if !ok {
		e.t.Fatalf("%s%v: no such series", name, labels)
	}
	return v
}

// TestServer_Limits_StreamsGiveBackTheirPlace: a stream whose client has
// left ends within seconds, with nothing to send (a record stream at the
// head, a quiet dashboard stream), so its place under MaxStreams and
// MaxStreamsPerClient comes back.
func TestServer_Limits_StreamsGiveBackTheirPlace(t *testing.T) {
	e := newServedEnv(t, &Options{MaxStreams: 10, MaxStreamsPerClient: 10})
	e.createTopic("orders", 1)
	var conns []net.Conn
	for i := range 10 {
		c, err := net.Dial("tcp", strings.TrimPrefix(e.url, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		path := "/api/events"
		if i%2 == 1 {
			path = "/api/topics/orders/partitions/0/stream"
		}
		c.SetDeadline(time.Now().Add(5 * time.Second))
		fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: localhost\r\n\r\n", path)
		if r, err := readRaw(bufio.NewReader(c), nil); err != nil || r.status != 200 {
			t.Fatalf("stream %d: %v %d", i, err, r.status)
		}
		conns = append(conns, c)
	}
	e.want(e.get("/api/events"), http.StatusServiceUnavailable, CodeTooManyStreams)
	for _, c := range conns {
		c.Close()
	}
	waitFor(t, "every stream ended", func() bool { return e.metric("passbook_http_sse_streams") == 0 })
	e.openSSE("/api/events", nil).next(t, 2*time.Second) // the snapshot
}
