package web

import (
	"net/http"
	"strings"
	"testing"

	"github.com/passbook-log/passbook"
)

func TestTopics_CreateListDescribeDelete(t *testing.T) {
	e := newEnv(t, nil)
	r := e.postJSON("/api/topics", map[string]any{"name": "orders", "config": map[string]any{"partitions": 3, "retention.ms": 3_600_000}})
	e.want(r, http.StatusCreated, "")
	if loc := r.header.Get("Location"); loc != "/api/topics/orders" {
		t.Errorf("Location %q", loc)
	}
	var info passbook.TopicInfo
	r.decode(t, &info)
	if info.Name != "orders" || len(info.Partitions) != 3 || info.Config.RetentionAge.Hours() != 1 {
		t.Fatalf("created %+v", info)
	}
	e.want(e.postJSON("/api/topics", map[string]any{"name": "clicks"}), http.StatusCreated, "")

	var list struct{ Topics []passbook.TopicInfo }
	r = e.get("/api/topics")
	e.want(r, http.StatusOK, "")
	r.decode(t, &list)
	if len(list.Topics) != 2 || list.Topics[0].Name != "clicks" || list.Topics[1].Name != "orders" {
		t.Fatalf("list %+v", list)
	}

	topic, _ := e.db.Topic("orders")
	fill(t, topic, 1, 5)
	r = e.get("/api/topics/orders")
	e.want(r, http.StatusOK, "")
	r.decode(t, &info)
	if p := info.Partitions[1]; p.Head != 5 || p.Records != 5 || p.Bytes == 0 || p.Segments != 1 {
		t.Fatalf("partition 1: %+v", p)
	}
	var pi passbook.PartitionInfo
	r = e.get("/api/topics/orders/partitions/1")
	e.want(r, http.StatusOK, "")
	r.decode(t, &pi)
	if pi.Partition != 1 || pi.Head != 5 {
		t.Fatalf("partition: %+v", pi)
	}

	e.want(e.do("DELETE", "/api/topics/orders", "", nil), http.StatusNoContent, "")
	e.want(e.get("/api/topics/orders"), http.StatusNotFound, CodeUnknownTopic)
	e.want(e.do("DELETE", "/api/topics/orders", "", nil), http.StatusNotFound, CodeUnknownTopic)
}

func TestTopics_Create_BadInput(t *testing.T) {
	e := newEnv(t, &Options{MaxBodyBytes: 1024})
	e.createTopic("orders", 1)
	for _, tc := range []struct {
		name, ct, body string
		status         int
		code           string
	}{
		{"malformed JSON", "application/json", `{"name": "x",`, 400, CodeMalformedJSON},
		{"not an object", "application/json", `[1, 2]`, 400, CodeMalformedJSON},
		{"empty body", "application/json", ``, 400, CodeMalformedJSON},
		{"two values", "application/json", `{"name": "a"} {"name": "b"}`, 400, CodeMalformedJSON},
		{"unknown field", "application/json", `{"name": "x", "partitions": 3}`, 400, CodeMalformedJSON},
		{"unknown config key", "application/json", `{"name": "x", "config": {"partition": 3}}`, 400, CodeInvalidConfig},
		{"bad config value", "application/json", `{"name": "x", "config": {"partitions": "three"}}`, 400, CodeInvalidConfig},
		{"invalid config", "application/json", `{"name": "x", "config": {"partitions": 20000}}`, 400, CodeInvalidConfig},
		{"bad durability", "application/json", `{"name": "x", "config": {"durability": "paper"}}`, 400, CodeInvalidConfig},
		{"path-like name", "application/json", `{"name": "../x"}`, 400, CodeInvalidName},
		{"slash in name", "application/json", `{"name": "a/b"}`, 400, CodeInvalidName},
		{"empty name", "application/json", `{"name": ""}`, 400, CodeInvalidName},
		{"exists", "application/json", `{"name": "orders"}`, 409, CodeTopicExists},
		{"wrong content type", "text/plain", `{"name": "x"}`, 415, CodeUnsupportedMedia},
		{"no content type", "", `{"name": "x"}`, 415, CodeUnsupportedMedia},
		{"oversized body", "application/json", `{"name": "` + strings.Repeat("x", 2000) + `"}`, 413, CodeBodyTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := e.with(t)
			e.want(e.do("POST", "/api/topics", tc.ct, tc.body), tc.status, tc.code)
		})
	}
	if n := len(e.db.Topics()); n != 1 {
		t.Errorf("%d topics after bad creates, want 1", n)
	}
}

func TestTopics_PathLikeNames(t *testing.T) {
	e := newEnv(t, nil)
	e.createTopic("orders", 1)
	// An escaped slash reaches the handler as a name, and is refused.
	e.want(e.get("/api/topics/..%2Forders"), http.StatusBadRequest, CodeInvalidName)
	e.want(e.do("DELETE", "/api/topics/..%2F..%2Fetc", "", nil), http.StatusBadRequest, CodeInvalidName)
	e.want(e.get("/api/topics/%2E%2E"), http.StatusBadRequest, CodeInvalidName)
	// A literal ../ is refused rather than redirected to another resource.
	for _, p := range []string{"/api/topics/../topics/orders", "/api/topics/./orders", "/api/topics//orders"} {
		req, _ := http.NewRequest("GET", e.url+"/", nil)
		req.URL.Path = p
		req.URL.RawPath = ""
		req.URL.Opaque = "//" + req.URL.Host + p // keep the dots on the wire
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: %d, want 400", p, res.StatusCode)
		}
	}
	e.want(e.get("/api/topics/bad%20name"), http.StatusBadRequest, CodeInvalidName)
	e.want(e.get("/api/topics/orders/partitions/x"), http.StatusBadRequest, CodeBadRequest)
	e.want(e.get("/api/topics/orders/partitions/-1"), http.StatusBadRequest, CodeBadRequest)
	e.want(e.get("/api/topics/orders/partitions/7"), http.StatusNotFound, CodeUnknownPartition)
	e.want(e.get("/api/topics/nope"), http.StatusNotFound, CodeUnknownTopic)
}

func TestServer_NoRoute(t *testing.T) {
	e := newEnv(t, nil)
	e.want(e.get("/api/nope"), http.StatusNotFound, CodeNotFound)
	e.want(e.get("/api"), http.StatusNotFound, CodeNotFound)
	r := e.do("PUT", "/api/topics", "application/json", `{}`)
	e.want(r, http.StatusMethodNotAllowed, CodeMethodNotAllowed)
	if a := r.header.Get("Allow"); a != "GET, POST" {
		t.Errorf("Allow %q, want GET, POST", a)
	}
	r = e.do("POST", "/api/topics/x", "application/json", `{}`)
	e.want(r, http.StatusMethodNotAllowed, CodeMethodNotAllowed)
	if a := r.header.Get("Allow"); a != "GET, DELETE" {
		t.Errorf("Allow %q, want GET, DELETE", a)
	}
}

func TestServer_HealthAndReady(t *testing.T) {
	e := newEnv(t, nil)
	e.want(e.get("/healthz"), http.StatusOK, "")
	e.want(e.get("/readyz"), http.StatusOK, "")
	e.s.Close()
	e.want(e.get("/healthz"), http.StatusOK, "")
	e.want(e.get("/readyz"), http.StatusServiceUnavailable, CodeUnavailable)
	e.want(e.get("/api/topics"), http.StatusServiceUnavailable, CodeUnavailable)
}

func TestServer_ReadyzClosedDB(t *testing.T) {
	e := newEnv(t, nil)
	e.db.Close()
	e.want(e.get("/readyz"), http.StatusServiceUnavailable, CodeUnavailable)
}

func TestServer_Dashboard(t *testing.T) {
	e := newEnv(t, nil)
	for path, want := range map[string]string{
		"/":                         "text/html",
		"/app.js":                   "text/javascript",
		"/app.css":                  "text/css",
		"/vendor/uPlot.iife.min.js": "text/javascript",
		"/vendor/uPlot.min.css":     "text/css",
		"/vendor/uPlot.LICENSE":     "text/plain",
		"/api/openapi.json":         "application/json",
		"/healthz":                  "application/json",
		"/metrics":                  "text/plain",
	} {
		r := e.get(path)
		if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), want) {
			t.Errorf("%s: %d %q, want 200 %s", path, r.status, r.header.Get("Content-Type"), want)
		}
	}
	for _, p := range []string{"/nope.js", "/vendor/", "/api/"} {
		if r := e.get(p); r.status != 404 {
			t.Errorf("%s: %d, want 404", p, r.status)
		}
	}
}
