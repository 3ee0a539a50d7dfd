package main

// Hostile HTTP clients against `passbook serve --http` run as a real
// process on 127.0.0.1 (the helpers are hostile_kafka_test.go's): an SSE
// flood, slow-body POSTs, idle connections and the connection cap. Each
// case is bounded, checks the server's peak RSS and descriptors against a
// budget and the limit's metric, and that normal clients — a franz-go
// producer and consumer, and one appending and reading through the HTTP
// API — keep working meanwhile.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// httpRound appends a record through the HTTP API and reads it back.
func (p *servedProc) httpRound(t *testing.T, topic string, i int) {
	t.Helper()
	c := &http.Client{Timeout: 10 * time.Second}
	base := "http://" + p.httpAddr
	res, err := c.Post(base+"/api/topics/"+topic+"/partitions/0/records", "application/json",
		strings.NewReader(fmt.Sprintf(`{"records":[{"value":"normal %d"}]}`, i)))
	if err != nil {
		t.Fatalf("HTTP client: append: %v", err)
	}
	var ap struct {
		Offsets []struct {
			Offset int64 `json:"offset"`
		} `json:"offsets"`
	}
	json.NewDecoder(res.Body).Decode(&ap)
	res.Body.Close()
	if res.StatusCode != 200 || len(ap.Offsets) != 1 {
		t.Fatalf("HTTP client: append: %d %v", res.StatusCode, ap)
	}
	res, err = c.Get(fmt.Sprintf("%s/api/topics/%s/partitions/0/records?offset=%d&limit=1", base, topic, ap.Offsets[0].Offset))
	if err != nil {
		t.Fatalf("HTTP client: read: %v", err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.Contains(string(b), fmt.Sprintf("normal %d", i)) {
		t.Fatalf("HTTP client: read: %d %s", res.StatusCode, b)
	}
}

// createTopicHTTP creates a topic of one partition through the API.
func (p *servedProc) createTopicHTTP(t *testing.T, name string) {
	t.Helper()
	res, err := http.Post("http://"+p.httpAddr+"/api/topics", "application/json", strings.NewReader(`{"name":"`+name+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusCreated && res.StatusCode != 200 {
		t.Fatalf("create topic %s: %d", name, res.StatusCode)
	}
}

// statusLine sends req on c and returns the answer's status code and
// Retry-After, and its body unless it is an event stream.
func statusLine(c net.Conn, req string) (code int, retryAfter, body string, err error) {
	if _, err := io.WriteString(c, req); err != nil {
		return 0, "", "", err
	}
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0, "", "", err
	}
	if res.Header.Get("Content-Type") != "text/event-stream" {
		b, _ := io.ReadAll(res.Body)
		body = string(b)
	}
	return res.StatusCode, res.Header.Get("Retry-After"), body, nil
}

// TestHostile_HTTP_SSEFlood: 2,000 SSE subscribers against
// --http-max-streams 100: 100 streams open, the other 1,900 are answered
// 503 too_many_streams with Retry-After and closed; the server's
// goroutines, RSS and descriptors stay within a budget; normal clients
// keep producing and fetching.
func TestHostile_HTTP_SSEFlood(t *testing.T) {
	const subscribers, limit = 2_000, 100
	p := startServe(t, "--http-max-streams", strconv.Itoa(limit), "--http-max-streams-per-client", "10000", "--http-max-connections", "5000")
	p.createTopicHTTP(t, "orders")
	n := newNormalClient(t, p.kafkaAddr, "flood")
	p.httpRound(t, "orders", 0)
	baseFDs := p.fds(t)
	baseGoroutines := p.metric(t, "go_goroutines")

	conns := dialMany(t, p.httpAddr, subscribers)
	codes := map[int]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Go(func() {
			c.SetDeadline(time.Now().Add(20 * time.Second))
			path := "/api/events"
			if i%2 == 1 {
				path = "/api/topics/orders/partitions/0/stream"
			}
			code, retry, body, err := statusLine(c, "GET "+path+" HTTP/1.1\r\nHost: localhost\r\n\r\n")
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				codes[-1]++
			case code == http.StatusServiceUnavailable && (retry == "" || !strings.Contains(body, `"too_many_streams"`)):
				t.Errorf("subscriber %d: 503 without Retry-After or too_many_streams: %q %s", i, retry, body)
			default:
				codes[code]++
			}
		})
	}
	wg.Wait()
	if codes[200] != limit || codes[503] != subscribers-limit {
		t.Fatalf("answers %v, want %d × 200 and %s × 503", codes, limit, strconv.Itoa(subscribers-limit))
	}
	n.during(t, 2*time.Second)
	for i := range 5 {
		p.httpRound(t, "orders", 1+i)
	}
	if got := p.metric(t, "passbook_http_sse_refused_total"); got != subscribers-limit {
		t.Errorf("passbook_http_sse_refused_total = %v, want %d", got, subscribers-limit)
	}
	if got := p.metric(t, "passbook_http_sse_streams"); got != limit {
		t.Errorf("passbook_http_sse_streams = %v, want %d", got, limit)
	}
	// One goroutine a stream, and slack for the normal clients.
	if g := p.metric(t, "go_goroutines"); g > baseGoroutines+limit+60 {
		t.Errorf("%v goroutines with %d streams open (%v before), want at most %v", g, limit, baseGoroutines, baseGoroutines+limit+60)
	} else {
		t.Logf("goroutines: %v before, %v with %d streams open and %s refused", baseGoroutines, g, limit, strconv.Itoa(subscribers-limit))
	}
	// The refused connections are closed by the server (Connection: close).
	fdBudget(t, "descriptors with the streams open", p.fds(t), baseFDs+limit+60)
	budget(t, "peak RSS", p.peakRSS(t), 200*mib)

	// The subscribers leave: their places come back within seconds (a
	// stream looks every second whether its client is still there).
	for _, c := range conns {
		c.Close()
	}
	for deadline := time.Now().Add(10 * time.Second); p.metric(t, "passbook_http_sse_streams") > 0; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("passbook_http_sse_streams = %v 10 s after every subscriber left", p.metric(t, "passbook_http_sse_streams"))
		}
	}
	fdBudget(t, "descriptors after the subscribers left", p.fds(t), baseFDs+20)
}

// TestHostile_HTTP_SlowBodies: 500 POSTs whose bodies arrive a byte every
// 300 ms are cut at --http-read-timeout (1 s): answered 408
// request_timeout and closed, within seconds; normal clients keep
// working meanwhile and the descriptors come back.
func TestHostile_HTTP_SlowBodies(t *testing.T) {
	const count = 500
	p := startServe(t, "--http-read-timeout", "1s")
	p.createTopicHTTP(t, "orders")
	n := newNormalClient(t, p.kafkaAddr, "slowbody")
	baseFDs := p.fds(t)
	conns := dialMany(t, p.httpAddr, count)
	var wg sync.WaitGroup
	var mu sync.Mutex
	answered := map[int]int{}
	for _, c := range conns {
		wg.Go(func() {
			c.SetDeadline(time.Now().Add(20 * time.Second))
			if _, err := io.WriteString(c, "POST /api/topics/orders/records HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"); err != nil {
				return
			}
			go func() {
				for range 30 {
					time.Sleep(300 * time.Millisecond)
					if _, err := c.Write([]byte(" ")); err != nil {
						return
					}
				}
			}()
			res, err := http.ReadResponse(bufio.NewReader(c), nil)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				answered[-1]++
				return
			}
			io.Copy(io.Discard, res.Body)
			answered[res.StatusCode]++
		})
	}
	n.during(t, 2*time.Second)
	p.httpRound(t, "orders", 0)
	wg.Wait()
	if answered[http.StatusRequestTimeout] != count {
		t.Fatalf("answers %v, want %d × 408", answered, count)
	}
	for i, c := range conns {
		if !closedByPeer(c, 5*time.Second) {
			t.Fatalf("slow connection %d still open", i)
		}
	}
	p.waitMetric(t, "passbook_http_request_timeouts_total", count)
	fdBudget(t, "descriptors after", p.fds(t), baseFDs+20)
	budget(t, "peak RSS", p.peakRSS(t), 200*mib)
}

// TestHostile_HTTP_ConnectionCap: at --http-max-connections, with every
// connection busy (long polls), a new connection is answered 503
// too_many_connections and closed and the descriptors stay at the cap;
// once some are idle for a second, a new client (an operator) takes the
// place of the one idle longest; idle keep-alive connections are closed
// at --http-idle-timeout.
func TestHostile_HTTP_ConnectionCap(t *testing.T) {
	const limit = 200
	p := startServe(t, "--http-max-connections", strconv.Itoa(limit), "--http-idle-timeout", "3s", "--http-max-streams-per-client", "1000")
	p.createTopicHTTP(t, "orders")
	n := newNormalClient(t, p.kafkaAddr, "conncap")
	baseFDs := p.fds(t)
	const longPoll = "GET /api/topics/orders/partitions/0/records?offset=latest&wait=30s HTTP/1.1\r\nHost: localhost\r\n\r\n"
	busy := dialMany(t, p.httpAddr, limit)
	for _, c := range busy {
		if _, err := io.WriteString(c, longPoll); err != nil {
			t.Fatal(err)
		}
	}
	// 50 clients come one after another, each told to come back later.
	for i := range 50 {
		c, err := net.DialTimeout("tcp", p.httpAddr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(10 * time.Second))
		code, retry, body, err := statusLine(c, "GET /api/topics HTTP/1.1\r\nHost: localhost\r\n\r\n")
		c.Close()
		if err != nil || code != http.StatusServiceUnavailable || retry == "" || !strings.Contains(body, `"too_many_connections"`) {
			t.Fatalf("connection %d over the cap: %d %q %s %v; want 503 too_many_connections with Retry-After", limit+i, code, retry, body, err)
		}
	}
	fdBudget(t, "descriptors at the cap", p.fds(t), baseFDs+limit+20)
	n.during(t, time.Second) // the Kafka port is not the HTTP port's cap

	// Half the long polls end (their clients leave); as many connections
	// make a request and stay open, idle.
	for _, c := range busy[:limit/2] {
		c.Close()
	}
	for deadline := time.Now().Add(10 * time.Second); p.fds(t) > baseFDs+limit/2+20; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d descriptors 10 s after half the long polls left", p.fds(t))
		}
	}
	idle := dialMany(t, p.httpAddr, limit/2)
	for i, c := range idle {
		c.SetDeadline(time.Now().Add(20 * time.Second))
		if code, _, _, err := statusLine(c, "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n"); err != nil || code != 200 {
			t.Fatalf("idle connection %d: %d %v", i, code, err)
		}
	}
	time.Sleep(1100 * time.Millisecond) // idle long enough to make room
	p.httpRound(t, "orders", 0)
	if got := p.metric(t, "passbook_http_connections_evicted_total"); got < 1 {
		t.Errorf("passbook_http_connections_evicted_total = %v, want at least 1", got)
	}
	if got := p.metric(t, "passbook_http_connections_refused_total"); got != 50 {
		t.Errorf("passbook_http_connections_refused_total = %v, want 50", got)
	}
	// The rest of the idle ones are closed at the idle timeout.
	for i, c := range idle {
		if !closedByPeer(c, 10*time.Second) {
			t.Fatalf("idle connection %d still open", i)
		}
	}
	budget(t, "peak RSS", p.peakRSS(t), 200*mib)
}
