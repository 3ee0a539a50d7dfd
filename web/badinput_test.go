package web

import (
	"net/http"
	"strings"
	"testing"
)

// TestBadInput_HTTP is the HTTP API's column of the bad-input table in
// docs/reliability.md: every kind of bad input, the status and error code
// a client gets, and nothing written.
func TestBadInput_HTTP(t *testing.T) {
	e := newEnv(t, &Options{MaxBodyBytes: 64 << 10, MaxAppendRecords: 10})
	orders := e.createTopic("orders", 2)
	fill(t, orders, 0, 3)
	big := `{"records":[{"value":"` + strings.Repeat("x", 70<<10) + `"}]}`
	many := `{"records":[` + strings.Repeat(`{"value":"x"},`, 10) + `{"value":"x"}]}`
	for _, tc := range []struct {
		name, method, path, ctype, body string
		status                          int
		code                            string
	}{
		{"oversized/body", "POST", "/api/topics/orders/records", "application/json", big, 413, CodeBodyTooLarge},
		{"oversized/records", "POST", "/api/topics/orders/records", "application/json", many, 413, CodeBodyTooLarge},
		{"oversized/topic name", "POST", "/api/topics", "application/json", `{"name":"` + strings.Repeat("a", 250) + `"}`, 400, CodeInvalidName},
		{"malformed/json", "POST", "/api/topics/orders/records", "application/json", `{"records":[{"value":`, 400, CodeMalformedJSON},
		{"malformed/query", "GET", "/api/topics/orders/partitions/0/records?offset=1&wait=soon", "", "", 400, CodeBadRequest},
		// Go's URL query parser drops a pair it cannot unescape: the
		// parameter is ignored, not refused.
		{"malformed/query escape", "GET", "/api/topics/orders/partitions/0/records?offset=1&limit=%zz", "", "", 200, ""},
		{"malformed/media type", "POST", "/api/topics/orders/records", "text/csv", "a,b", 415, CodeUnsupportedMedia},
		{"wrong type/value", "POST", "/api/topics/orders/records", "application/json", `{"records":[{"value":42}]}`, 400, CodeMalformedJSON},
		{"wrong type/offset", "GET", "/api/topics/orders/partitions/0/records?offset=ten", "", "", 400, CodeBadRequest},
		{"wrong type/config", "POST", "/api/topics", "application/json", `{"name":"t","config":{"partitions":"three"}}`, 400, CodeInvalidConfig},
		{"out of range/offset", "GET", "/api/topics/orders/partitions/0/records?offset=99", "", "", 416, CodeOutOfRange},
		{"out of range/partition", "GET", "/api/topics/orders/partitions/7/records", "", "", 404, CodeUnknownPartition},
		{"out of range/limit", "GET", "/api/topics/orders/partitions/0/records?limit=-1", "", "", 400, CodeBadRequest},
		{"out of range/partitions", "POST", "/api/topics", "application/json", `{"name":"t","config":{"partitions":20000}}`, 400, CodeInvalidConfig},
		{"out of range/commit", "POST", "/api/consumers/c/topics/orders/commit", "application/json", `{"offsets":[{"partition":0,"offset":-3}]}`, 416, CodeOutOfRange},
		{"unknown name/topic", "GET", "/api/topics/nope", "", "", 404, CodeUnknownTopic},
		{"unknown name/consumer", "GET", "/api/consumers/nobody", "", "", 404, CodeUnknownConsumer},
		{"unknown name/route", "GET", "/api/nothing", "", "", 404, CodeNotFound},
		{"unknown name/method", "PUT", "/api/topics/orders", "application/json", `{}`, 405, CodeMethodNotAllowed},
		{"path-like/create", "POST", "/api/topics", "application/json", `{"name":"../x"}`, 400, CodeInvalidName},
		{"path-like/escaped", "GET", "/api/topics/..%2Fx", "", "", 400, CodeInvalidName},
		{"path-like/dot-dot", "GET", "/api/topics/%2E%2E", "", "", 400, CodeInvalidName},
		{"empty/body", "POST", "/api/topics/orders/records", "application/json", ``, 400, CodeMalformedJSON},
		{"empty/records", "POST", "/api/topics/orders/records", "application/json", `{"records":[]}`, 400, CodeBadRequest},
		{"empty/topic name", "POST", "/api/topics", "application/json", `{"name":""}`, 400, CodeInvalidName},
		{"unicode/topic name", "POST", "/api/topics", "application/json", `{"name":"commandes-été"}`, 400, CodeInvalidName},
		{"unicode/invalid UTF-8 path", "GET", "/%ff", "", "", 404, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.with(t).do(tc.method, tc.path, tc.ctype, tc.body)
			if r.status != tc.status || r.errorCode() != tc.code {
				t.Fatalf("%s %s: %d %q, want %d %q\n%.300s", tc.method, tc.path, r.status, r.errorCode(), tc.status, tc.code, r.body)
			}
			t.Logf("%d %s", r.status, strings.TrimSpace(string(r.body[:min(len(r.body), 200)])))
		})
	}
	// Unicode in keys, values and headers is data: it comes back as sent.
	t.Run("unicode/data", func(t *testing.T) {
		r := e.with(t).postJSON("/api/topics/orders/partitions/1/records", `{"records":[{"key":"clé","value":"valeur-日本-🔑","headers":{"en-tête":"ü"}}]}`)
		if r.status != http.StatusOK {
			t.Fatalf("%d %s", r.status, r.body)
		}
		r = e.with(t).get("/api/topics/orders/partitions/1/records?offset=0")
		if !strings.Contains(string(r.body), `"valeur-日本-🔑"`) || !strings.Contains(string(r.body), `"en-tête"`) {
			t.Fatalf("%s", r.body)
		}
	})
	if n := len(e.db.Topics()); n != 1 {
		t.Errorf("%d topics after refused input", n)
	}
	if l, _ := orders.Partition(0); l.Head() != 3 {
		t.Errorf("head %d after refused input", l.Head())
	}
}
