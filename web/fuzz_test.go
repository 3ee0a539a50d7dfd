package web

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/offsets"
	"github.com/passbook-log/passbook/vfs"
)

// fuzzServer is one server for a whole fuzzing process: topics on a
// MemFS, the offset store in a temporary directory.
var fuzzServer = sync.OnceValue(func() *fuzzEnv {
	dir, err := os.MkdirTemp("", "passbook-web-fuzz-")
	if err != nil {
		panic(err)
	}
	mem := vfs.NewMem()
	mem.MkdirAll(dir, 0o755)
	db, err := passbook.Open(dir, &passbook.Options{FS: mem, MinSegmentBytes: -1})
	if err != nil {
		panic(err)
	}
	orders, err := db.CreateTopic("orders", passbook.TopicConfig{Partitions: 2, SegmentBytes: 4 << 10})
	if err != nil {
		panic(err)
	}
	for i := range 50 {
		rec := passbook.Record{Key: fmt.Appendf(nil, "k%d", i%5), Value: fmt.Appendf(nil, "order-%d", i),
			Headers: []passbook.Header{{Key: "h", Value: []byte("v")}}}
		if _, err := orders.Append(rec); err != nil {
			panic(err)
		}
	}
	db.Offsets().Commit(context.Background(), offsets.Key{Consumer: "billing", Topic: "orders", Partition: 0}, 10)
	s := NewServer(db, &Options{MaxBodyBytes: 64 << 10, MaxAppendRecords: 100, MaxReadRecords: 50, MaxWait: 50 * time.Millisecond,
		EventInterval: 10 * time.Millisecond, Heartbeat: 10 * time.Millisecond})
	return &fuzzEnv{db: db, s: s}
})

type fuzzEnv struct {
	mu sync.Mutex // one request at a time: the fuzz function restores the topics after each
	db *passbook.DB
	s  *Server
}

var fuzzMethods = []string{"GET", "POST", "DELETE", "PUT", "HEAD", "OPTIONS", "PATCH"}

var fuzzTypes = []string{"application/json", "application/octet-stream", "", "text/plain", "application/json; charset=utf-8", "multipart/form-data; boundary=x"}

// FuzzHTTP sends arbitrary requests — method, path, query, headers and
// body — to the HTTP API's handler. None may panic, none may answer 5xx
// (503 aside, which the API uses only while shutting down), and every
// /api/ answer that is not a stream is JSON: a value, or an error object
// with a code.
func FuzzHTTP(f *testing.F) {
	seeds := []struct {
		method      byte
		path, query string
		ctype       byte
		body        string
	}{
		{0, "/api/topics", "", 2, ""},
		{1, "/api/topics", "", 0, `{"name":"t2","config":{"partitions":2,"retention.ms":1000,"cleanup.policy":"compact"}}`},
		{1, "/api/topics", "", 0, `{"name":"../x"}`},
		{0, "/api/topics/orders", "", 2, ""},
		{2, "/api/topics/t2", "", 2, ""},
		{1, "/api/topics/orders/records", "", 0, `{"records":[{"key":"a","value":"v","headers":{"h":"x"}},{"value":null,"partition":1},{"key":"b","value":"w","timestamp":"2026-01-02T03:04:05Z"}]}`},
		{1, "/api/topics/orders/records", "key=dave&header=source:cli&durability=fsync", 1, "raw bytes"},
		{1, "/api/topics/orders/partitions/1/records", "", 0, `{"records":[{"value":"x"}]}`},
		{0, "/api/topics/orders/partitions/0", "", 2, ""},
		{0, "/api/topics/orders/partitions/0/records", "offset=3&limit=5&max_bytes=100", 2, ""},
		{0, "/api/topics/orders/partitions/0/records", "offset=100&wait=1s", 2, ""},
		{0, "/api/topics/orders/partitions/0/records", "from=earliest&format=json", 2, ""},
		{0, "/api/topics/orders/partitions/0/stream", "from=latest", 2, ""},
		{0, "/api/consumers", "", 2, ""},
		{0, "/api/consumers/billing", "", 2, ""},
		{0, "/api/consumers/billing/topics/orders", "", 2, ""},
		{1, "/api/consumers/billing/topics/orders/commit", "", 0, `{"offsets":[{"partition":0,"offset":12}]}`},
		{1, "/api/consumers/billing/topics/orders/reset", "", 0, `{"to":"2026-11-28T00:00:00Z","partitions":[0,1]}`},
		{1, "/api/consumers/billing/topics/orders/reset", "", 0, `{"to":"earliest"}`},
		{0, "/api/events", "", 2, ""},
		{0, "/api/history", "", 2, ""},
		{0, "/api/openapi.json", "", 2, ""},
		{0, "/healthz", "", 2, ""},
		{0, "/metrics", "", 2, ""},
		{0, "/", "", 2, ""},
		{0, "/api/topics/%2e%2e%2fx", "", 2, ""},
		{1, "/api/topics/orders/records", "", 0, `{"records":[{"value":"` + strings.Repeat("é", 100) + `"}]}`},
	}
	for _, s := range seeds {
		f.Add(s.method, s.path, s.query, s.ctype, []byte(s.body))
	}
	f.Fuzz(func(t *testing.T, method byte, path, query string, ctype byte, body []byte) {
		fe := fuzzServer()
		fe.mu.Lock()
		defer fe.mu.Unlock()
		defer fe.restore(t)
		if !strings.HasPrefix(path, "/") {
			path = "/" + path
		}
		target := path
		if query != "" {
			target += "?" + query
		}
		req, err := http.NewRequest(fuzzMethods[int(method)%len(fuzzMethods)], "http://localhost"+target, bytes.NewReader(body))
		if err != nil {
			return // not a request a client could send
		}
		if ct := fuzzTypes[int(ctype)%len(fuzzTypes)]; ct != "" {
			req.Header.Set("Content-Type", ct)
		}
		if ctype&0x80 != 0 {
			req.Header.Set("Last-Event-ID", query)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		req = req.WithContext(ctx)
		w := httptest.NewRecorder()
		fe.s.ServeHTTP(w, req)
		code := w.Code
		if code >= 500 && code != http.StatusServiceUnavailable {
			t.Fatalf("%s %s (%q, %d bytes): %d %s", req.Method, target, req.Header.Get("Content-Type"), len(body), code, w.Body.Bytes())
		}
		ct := w.Header().Get("Content-Type")
		if strings.HasPrefix(req.URL.Path, "/api/") && strings.HasPrefix(ct, "application/json") && req.Method != "HEAD" {
			var v any
			if err := json.Unmarshal(w.Body.Bytes(), &v); err != nil {
				t.Fatalf("%s %s: %d with a body that is not JSON: %v: %q", req.Method, target, code, err, w.Body.Bytes())
			}
			if code >= 400 {
				e, _ := v.(map[string]any)["error"].(map[string]any)
				if c, _ := e["code"].(string); c == "" {
					t.Fatalf("%s %s: %d without an error code: %s", req.Method, target, code, w.Body.Bytes())
				}
			}
		}
	})
}

// restore puts the DB back as the fuzz server made it, so that state
// does not pile up over millions of requests: only topic orders, with
// its 2 partitions.
func (fe *fuzzEnv) restore(t *testing.T) {
	for _, topic := range fe.db.Topics() {
		if topic.Name() != "orders" {
			if err := fe.db.DeleteTopic(context.Background(), topic.Name()); err != nil {
				t.Fatalf("delete topic %s: %v", topic.Name(), err)
			}
		}
	}
	if _, err := fe.db.Topic("orders"); err != nil {
		if _, err := fe.db.CreateTopic("orders", passbook.TopicConfig{Partitions: 2, SegmentBytes: 4 << 10}); err != nil {
			t.Fatalf("recreate orders: %v", err)
		}
	}
}
