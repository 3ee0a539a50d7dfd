package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuffer is a bytes.Buffer safe for the server's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestServe_HTTP runs `passbook serve --http` and reaches the dashboard,
// the API and /metrics with one command; an interrupt stops it cleanly,
// even with an SSE stream open.
func TestServe_HTTP(t *testing.T) {
	data := t.TempDir()
	if _, _, code := runCLI(t, "", "--data", data, "topic", "create", "orders"); code != 0 {
		t.Fatal("topic create failed")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr lockedBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--data", data, "serve", "--kafka", "127.0.0.1:0", "--http", "127.0.0.1:0"}, strings.NewReader(""), &stdout, &stderr)
	}()
	urlRE := regexp.MustCompile(`url=(http://127\.0\.0\.1:\d+/)`)
	var base string
	for deadline := time.Now().Add(10 * time.Second); base == "" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if m := urlRE.FindStringSubmatch(stderr.String()); m != nil {
			base = m[1]
		}
	}
	if base == "" {
		t.Fatalf("no HTTP address logged:\n%s", stderr.String())
	}
	for path, want := range map[string]string{
		"":                     "<title>passbook</title>",
		"api/topics":           `"name":"orders"`,
		"readyz":               `"ready"`,
		"metrics":              "passbook_fsync_duration_seconds",
		"api/openapi.json":     `"openapi"`,
		"vendor/uPlot.LICENSE": "MIT",
	} {
		res, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 || !strings.Contains(string(b), want) {
			t.Errorf("GET /%s: %d, body without %q:\n%.300s", path, res.StatusCode, want, b)
		}
	}
	stream, err := http.Get(base + "api/events")
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Body.Close()

	began := time.Now()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve: %v\n%s", err, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop within 10 s of the interrupt")
	}
	if took := time.Since(began); took > 5*time.Second {
		t.Errorf("shutdown took %v: the SSE stream held it", took)
	}
	if !strings.Contains(stderr.String(), "data directory closed cleanly") {
		t.Errorf("no clean close logged:\n%s", stderr.String())
	}
}
