package web

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/passbook-log/passbook"
)

// env is a server on a fresh data directory, served by httptest.
type env struct {
	t   *testing.T
	db  *passbook.DB
	s   *Server
	ts  *httptest.Server
	url string
}

func newEnv(t *testing.T, opts *Options) *env {
	t.Helper()
	return newEnvDB(t, nil, opts)
}

func newEnvDB(t *testing.T, dbOpts *passbook.Options, opts *Options) *env {
	t.Helper()
	return newEnvSetup(t, dbOpts, opts, nil)
}

// newEnvSetup calls setup on the DB before the server starts, as when a
// server starts on a data directory that has history.
func newEnvSetup(t *testing.T, dbOpts *passbook.Options, opts *Options, setup func(*passbook.DB)) *env {
	t.Helper()
	// Tests use segments under the 1 MiB floor, to roll them cheaply.
	o := passbook.Options{MinSegmentBytes: -1}
	if dbOpts != nil {
		o = *dbOpts
		if o.MinSegmentBytes == 0 {
			o.MinSegmentBytes = -1
		}
	}
	db, err := passbook.Open(t.TempDir(), &o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if setup != nil {
		setup(db)
	}
	if opts == nil {
		opts = &Options{}
	}
	if opts.EventInterval == 0 {
		opts.EventInterval = 50 * time.Millisecond
	}
	s := NewServer(db, opts)
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	t.Cleanup(func() { s.Close() }) // first: it ends the streams ts.Close waits for
	return &env{t: t, db: db, s: s, ts: ts, url: ts.URL}
}

// with returns e reporting to t, for subtests.
func (e *env) with(t *testing.T) *env {
	c := *e
	c.t = t
	return &c
}

// response is a decoded answer.
type response struct {
	status int
	header http.Header
	body   []byte
}

// json decodes the body into a generic value.
func (r response) json(t *testing.T) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(r.body, &v); err != nil {
		t.Fatalf("body is not a JSON object: %v\n%s", err, r.body)
	}
	return v
}

// decode decodes the body into v.
func (r response) decode(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decode %T: %v\n%s", v, err, r.body)
	}
}

// errorCode is the "code" of a JSON error body, or "".
func (r response) errorCode() string {
	var v struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	json.Unmarshal(r.body, &v)
	return v.Error.Code
}

// do sends a request; body is a string, []byte or a value to marshal as JSON.
func (e *env) do(method, path, contentType string, body any) response {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = strings.NewReader(string(b))
	default:
		j, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = strings.NewReader(string(j))
	}
	req, err := http.NewRequest(method, e.url+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return response{status: res.StatusCode, header: res.Header, body: b}
}

func (e *env) get(path string) response { e.t.Helper(); return e.do("GET", path, "", nil) }

func (e *env) postJSON(path string, body any) response {
	e.t.Helper()
	return e.do("POST", path, "application/json", body)
}

// want checks the status (and the error code, for errors).
func (e *env) want(r response, status int, code string) {
	e.t.Helper()
	if r.status != status || r.errorCode() != code {
		e.t.Fatalf("got %d %q, want %d %q\n%s", r.status, r.errorCode(), status, code, r.body)
	}
	if ct := r.header.Get("Content-Type"); status != http.StatusNoContent && !strings.HasPrefix(ct, "application/json") {
		e.t.Fatalf("Content-Type %q, want application/json", ct)
	}
}

// createTopic creates a topic with n partitions.
func (e *env) createTopic(name string, partitions int) *passbook.Topic {
	e.t.Helper()
	t, err := e.db.CreateTopic(name, passbook.TopicConfig{Partitions: partitions})
	if err != nil {
		e.t.Fatal(err)
	}
	return t
}

// fill appends n records "v0", "v1", … to partition p of t.
func fill(t *testing.T, topic *passbook.Topic, p int32, n int) {
	t.Helper()
	for done := 0; done < n; {
		batch := make([]passbook.Record, 0, min(1000, n-done))
		for range cap(batch) {
			batch = append(batch, passbook.Record{Value: []byte("v" + strconv.Itoa(done))})
			done++
		}
		if _, err := topic.AppendTo(p, batch, 0); err != nil {
			t.Fatal(err)
		}
	}
}

// event is one Server-Sent Event.
type event struct {
	id, name, data string
}

// sseClient reads events from a stream into a channel.
type sseClient struct {
	events chan event
	res    *http.Response
	cancel context.CancelFunc
}

// openSSE opens a stream; header values (like Last-Event-ID) are set on
// the request. It fails the test unless the answer is an event stream.
func (e *env) openSSE(path string, header map[string]string) *sseClient {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", e.url+path, nil)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		e.t.Fatal(err)
	}
	if ct := res.Header.Get("Content-Type"); res.StatusCode != 200 || ct != "text/event-stream" {
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		cancel()
		e.t.Fatalf("stream %s: %d %s\n%s", path, res.StatusCode, ct, b)
	}
	c := &sseClient{events: make(chan event, 1024), res: res, cancel: cancel}
	go func() {
		defer close(c.events)
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		var ev event
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if ev.name != "" || ev.data != "" {
					select {
					case c.events <- ev:
					case <-ctx.Done(): // closed with events nobody read
						return
					}
				}
				ev = event{}
			case strings.HasPrefix(line, "id: "):
				ev.id = line[4:]
			case strings.HasPrefix(line, "event: "):
				ev.name = line[7:]
			case strings.HasPrefix(line, "data: "):
				ev.data += line[6:]
			}
		}
	}()
	e.t.Cleanup(c.close)
	return c
}

func (c *sseClient) close() {
	c.cancel()
	c.res.Body.Close()
}

// next returns the next event, failing the test after timeout.
func (c *sseClient) next(t *testing.T, timeout time.Duration) event {
	t.Helper()
	select {
	case ev, ok := <-c.events:
		if !ok {
			t.Fatal("the stream ended")
		}
		return ev
	case <-time.After(timeout):
		t.Fatalf("no event within %v", timeout)
	}
	return event{}
}
