package kafka

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/passbook-log/passbook"
	"github.com/twmb/franz-go/pkg/kgo"
)

// testServer is a Server on a free loopback port over a DB in a
// temporary directory, stopped and closed when the test ends.
type testServer struct {
	addr string
	db   *passbook.DB
	srv  *Server
	log  *requestLog
}

func startServer(t testing.TB, opts *Options) *testServer {
	t.Helper()
	db, err := passbook.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return startServerOn(t, db, opts)
}

func startServerOn(t testing.TB, db *passbook.DB, opts *Options) *testServer {
	t.Helper()
	var o Options
	if opts != nil {
		o = *opts
	}
	rl := &requestLog{versions: map[string]map[int16]bool{}}
	level := slog.LevelDebug
	if os.Getenv("PASSBOOK_TEST_LOG") == "" {
		level = slog.LevelWarn + 100 // only the request log
	}
	o.Logger = slog.New(&recordingHandler{rl: rl, Handler: slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})})
	srv, err := NewServer(db, &o)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(context.Background(), ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		if err := <-done; err != ErrServerClosed {
			t.Errorf("serve returned %v, want ErrServerClosed", err)
		}
		if err := db.Close(); err != nil {
			t.Errorf("close db: %v", err)
		}
	})
	return &testServer{addr: ln.Addr().String(), db: db, srv: srv, log: rl}
}

// client returns a franz-go client for the server, closed at the end of
// the test.
func (ts *testServer) client(t testing.TB, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(ts.addr)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func (ts *testServer) createTopic(t testing.TB, name string, partitions int) *passbook.Topic {
	t.Helper()
	topic, err := ts.db.CreateTopic(name, passbook.TopicConfig{Partitions: partitions})
	if err != nil {
		t.Fatal(err)
	}
	return topic
}

// requestLog records which version of each API the server was sent.
type requestLog struct {
	mu       sync.Mutex
	versions map[string]map[int16]bool
}

// String lists the versions seen, like "ApiVersions v3, Metadata v12".
func (rl *requestLog) String() string {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	var parts []string
	for api, vs := range rl.versions {
		var list []string
		for v := range vs {
			list = append(list, fmt.Sprint(v))
		}
		sort.Strings(list)
		parts = append(parts, api+" v"+strings.Join(list, ",v"))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

type recordingHandler struct {
	rl *requestLog
	slog.Handler
}

func (h *recordingHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l == slog.LevelDebug || h.Handler.Enabled(ctx, l)
}

func (h *recordingHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "kafka: request" {
		var api string
		var version int16
		r.Attrs(func(a slog.Attr) bool {
			switch a.Key {
			case "api":
				api = a.Value.String()
			case "version":
				version = int16(a.Value.Int64())
			}
			return true
		})
		h.rl.mu.Lock()
		if h.rl.versions[api] == nil {
			h.rl.versions[api] = map[int16]bool{}
		}
		h.rl.versions[api][version] = true
		h.rl.mu.Unlock()
	}
	if h.Handler.Enabled(ctx, r.Level) {
		return h.Handler.Handle(ctx, r)
	}
	return nil
}

func (h *recordingHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &recordingHandler{rl: h.rl, Handler: h.Handler.WithAttrs(as)}
}

func (h *recordingHandler) WithGroup(name string) slog.Handler {
	return &recordingHandler{rl: h.rl, Handler: h.Handler.WithGroup(name)}
}
