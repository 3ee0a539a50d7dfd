package web

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/passbook-log/passbook/offsets"
	"github.com/prometheus/client_golang/prometheus"
)

// request is one hand-made HTTP request of the guard's tests.
type request struct {
	method, path string
	host         string // the Host header; default: the test server's address
	header       map[string]string
	ctype, body  string
}

func (e *env) send(rq request) response {
	e.t.Helper()
	req, err := http.NewRequest(rq.method, e.url+rq.path, strings.NewReader(rq.body))
	if err != nil {
		e.t.Fatal(err)
	}
	if rq.host != "" {
		req.Host = rq.host
	}
	if rq.ctype != "" {
		req.Header.Set("Content-Type", rq.ctype)
	}
	for k, v := range rq.header {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return response{status: res.StatusCode, header: res.Header, body: b}
}

// dbState is everything a request could change: the topics, each
// partition's extent, the committed offsets.
func (e *env) dbState() string {
	e.t.Helper()
	var b strings.Builder
	for _, t := range e.db.Topics() {
		for _, p := range t.Describe().Partitions {
			fmt.Fprintf(&b, "%s/%d [%d, %d)\n", t.Name(), p.Partition, p.StartOffset, p.Head)
		}
	}
	entries, err := e.db.Offsets().List(context.Background(), offsets.Filter{})
	if err != nil {
		e.t.Fatal(err)
	}
	for _, en := range entries {
		fmt.Fprintf(&b, "%s on %s/%d at %d\n", en.Consumer, en.Topic, en.Partition, en.Offset)
	}
	return b.String()
}

// newGuardEnv is a server with topic orders (1 partition, 3 records)
// and consumer billing committed at 1 on it.
func newGuardEnv(t *testing.T, opts *Options) (*env, string) {
	e := newEnv(t, opts)
	fill(t, e.createTopic("orders", 1), 0, 3)
	if err := e.db.Offsets().Commit(context.Background(), offsets.Key{Consumer: "billing", Topic: "orders", Partition: 0}, 1); err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(e.url)
	return e, u.Host // 127.0.0.1:PORT
}

// The cases: a page on another origin, or a name of its own
// rebound to 127.0.0.1, reaches the API through the user's browser.
// Each is refused and nothing changes.
func TestGuard_RefusesBrowserAttacks(t *testing.T) {
	e, self := newGuardEnv(t, nil)
	_, port, _ := strings.Cut(self, ":")
	evil := "http://attacker.example"
	crossSite := map[string]string{"Origin": evil, "Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "no-cors"}
	for _, c := range []struct {
		name   string
		rq     request
		status int
		code   string
	}{
		{"cross-origin text/plain append", request{method: "POST", path: "/api/topics/orders/records", header: crossSite, ctype: "text/plain", body: "hello"}, 403, CodeCrossOrigin},
		{"cross-origin append, old browser (Origin only)", request{method: "POST", path: "/api/topics/orders/records", header: map[string]string{"Origin": evil}, ctype: "text/plain", body: "hello"}, 403, CodeCrossOrigin},
		{"cross-origin append, Referer only", request{method: "POST", path: "/api/topics/orders/records", header: map[string]string{"Referer": evil + "/page.html"}, ctype: "text/plain", body: "hello"}, 403, CodeCrossOrigin},
		{"sandboxed page (Origin: null)", request{method: "POST", path: "/api/topics/orders/records", header: map[string]string{"Origin": "null"}, ctype: "application/octet-stream", body: "hello"}, 403, CodeCrossOrigin},
		{"cross-origin form create", request{method: "POST", path: "/api/topics", header: crossSite, ctype: "application/x-www-form-urlencoded", body: "name=evil"}, 403, CodeCrossOrigin},
		{"same-site form create", request{method: "POST", path: "/api/topics", header: map[string]string{"Origin": "http://other.localhost", "Sec-Fetch-Site": "same-site"}, ctype: "multipart/form-data; boundary=x", body: "--x--"}, 403, CodeCrossOrigin},
		{"cross-origin JSON create (fetch)", request{method: "POST", path: "/api/topics", header: map[string]string{"Origin": evil, "Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "cors"}, ctype: "application/json", body: `{"name":"evil"}`}, 403, CodeCrossOrigin},
		{"cross-origin DELETE", request{method: "DELETE", path: "/api/topics/orders", header: crossSite}, 403, CodeCrossOrigin},
		{"cross-origin consumer reset", request{method: "POST", path: "/api/consumers/billing/topics/orders/reset", header: crossSite, ctype: "text/plain", body: `{"to":"latest"}`}, 403, CodeCrossOrigin},
		{"text/plain append without an origin", request{method: "POST", path: "/api/topics/orders/records", ctype: "text/plain", body: "hello"}, 415, CodeUnsupportedMedia},
		{"form commit without an origin", request{method: "POST", path: "/api/consumers/billing/topics/orders/commit", ctype: "application/x-www-form-urlencoded", body: "x=1"}, 415, CodeUnsupportedMedia},
		{"foreign Host", request{method: "POST", path: "/api/topics", host: "attacker.example", ctype: "application/json", body: `{"name":"evil"}`}, 421, CodeMisdirected},
		{"foreign Host reads", request{method: "GET", path: "/api/topics", host: "attacker.example"}, 421, CodeMisdirected},
		{"rebinding to the right port: DELETE", request{method: "DELETE", path: "/api/topics/orders", host: "attacker.example:" + port,
			header: map[string]string{"Origin": evil + ":" + port, "Sec-Fetch-Site": "same-origin"}}, 421, CodeMisdirected},
		{"rebinding to the right port: append", request{method: "POST", path: "/api/topics/orders/records", host: "attacker.example:" + port,
			header: map[string]string{"Origin": evil + ":" + port, "Sec-Fetch-Site": "same-origin"}, ctype: "text/plain", body: "hello"}, 421, CodeMisdirected},
		{"rebinding to the right port: read the records", request{method: "GET", path: "/api/topics/orders/partitions/0/records", host: "attacker.example:" + port}, 421, CodeMisdirected},
		{"rebinding to the right port: the dashboard", request{method: "GET", path: "/", host: "attacker.example:" + port}, 421, CodeMisdirected},
		{"rebinding to the right port: metrics", request{method: "GET", path: "/metrics", host: "attacker.example:" + port}, 421, CodeMisdirected},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := e.with(t)
			before := e.dbState()
			r := e.send(c.rq)
			e.want(r, c.status, c.code)
			if after := e.dbState(); after != before {
				t.Errorf("the state changed:\n%s\nwas:\n%s", after, before)
			}
			if h := r.header.Get("Access-Control-Allow-Origin"); h != "" {
				t.Errorf("Access-Control-Allow-Origin: %s", h)
			}
		})
	}
	body := e.get("/metrics").body
	for _, want := range []string{`passbook_http_guard_refused_total{reason="cross_origin"} 9`, `passbook_http_guard_refused_total{reason="content_type"} 2`, `passbook_http_guard_refused_total{reason="host"} 7`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// What the guard lets through: the dashboard's own page, clients that
// are not browsers, the names the server answers to.
func TestGuard_Passes(t *testing.T) {
	e, self := newGuardEnv(t, &Options{AllowedHosts: []string{"passbook.internal"}, Advertise: "broker.example:9092"})
	_, port, _ := strings.Cut(self, ":")
	own := map[string]string{"Origin": "http://" + self, "Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "cors"}
	for _, c := range []struct {
		name   string
		rq     request
		status int
	}{
		{"same-origin JSON append", request{method: "POST", path: "/api/topics/orders/records", header: own, ctype: "application/json", body: `{"records":[{"value":"a"}]}`}, 200},
		{"same-origin text/plain append", request{method: "POST", path: "/api/topics/orders/records", header: own, ctype: "text/plain", body: "b"}, 200},
		{"same origin by Origin alone", request{method: "POST", path: "/api/topics/orders/records", header: map[string]string{"Origin": "http://" + self}, ctype: "text/plain", body: "c"}, 200},
		{"same-origin Referer", request{method: "POST", path: "/api/topics/orders/records", header: map[string]string{"Referer": "http://" + self + "/"}, ctype: "application/octet-stream", body: "d"}, 200},
		{"curl: no browser headers", request{method: "POST", path: "/api/topics/orders/records", ctype: "application/octet-stream", body: "e"}, 200},
		{"curl creates a topic", request{method: "POST", path: "/api/topics", ctype: "application/json", body: `{"name":"made"}`}, 201},
		{"same-origin DELETE", request{method: "DELETE", path: "/api/topics/made", header: own}, 204},
		{"cross-origin GET (the browser hides the answer)", request{method: "GET", path: "/api/topics", header: map[string]string{"Origin": "http://attacker.example", "Sec-Fetch-Site": "cross-site"}}, 200},
		{"Host localhost:PORT", request{method: "GET", path: "/api/topics", host: "localhost:" + port}, 200},
		{"Host localhost", request{method: "GET", path: "/api/topics", host: "localhost"}, 200},
		{"Host [::1]:PORT", request{method: "GET", path: "/api/topics", host: "[::1]:" + port}, 200},
		{"Host 127.0.0.1", request{method: "GET", path: "/api/topics", host: "127.0.0.1"}, 200},
		{"Host in AllowedHosts", request{method: "GET", path: "/api/topics", host: "Passbook.Internal:8080"}, 200},
		{"Host of Advertise", request{method: "GET", path: "/api/topics", host: "broker.example"}, 200},
		{"healthz under any name", request{method: "GET", path: "/healthz", host: "lb-probe.example"}, 200},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := e.with(t)
			r := e.send(c.rq)
			if r.status != c.status {
				t.Fatalf("got %d, want %d\n%s", r.status, c.status, r.body)
			}
			if h := r.header.Get("Access-Control-Allow-Origin"); h != "" {
				t.Errorf("Access-Control-Allow-Origin: %s", h)
			}
		})
	}
	if got := e.dbState(); !strings.Contains(got, "orders/0 [0, 8)") || strings.Contains(got, "made") {
		t.Errorf("state after the appends:\n%s", got)
	}
}

// With Options.CORSOrigins, pages of those origins may call the API;
// others get no CORS headers and their writes are refused.
func TestGuard_CORS(t *testing.T) {
	app := "http://app.example:3000"
	e, _ := newGuardEnv(t, &Options{CORSOrigins: []string{app}})

	pre := e.send(request{method: "OPTIONS", path: "/api/topics/orders/records", header: map[string]string{
		"Origin": app, "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type, authorization"}})
	if pre.status != 204 || pre.header.Get("Access-Control-Allow-Origin") != app ||
		!strings.Contains(pre.header.Get("Access-Control-Allow-Methods"), "POST") ||
		!strings.Contains(pre.header.Get("Access-Control-Allow-Headers"), "Authorization") ||
		!slices.Contains(pre.header.Values("Vary"), "Origin") {
		t.Fatalf("preflight: %d %v", pre.status, pre.header)
	}
	if c := pre.header.Get("Access-Control-Allow-Credentials"); c != "" {
		t.Errorf("Access-Control-Allow-Credentials: %s", c)
	}
	fromApp := map[string]string{"Origin": app, "Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "cors"}
	r := e.send(request{method: "POST", path: "/api/topics/orders/records", header: fromApp, ctype: "application/json", body: `{"records":[{"value":"a"}]}`})
	if r.status != 200 || r.header.Get("Access-Control-Allow-Origin") != app {
		t.Fatalf("append from %s: %d %v\n%s", app, r.status, r.header, r.body)
	}
	r = e.send(request{method: "POST", path: "/api/topics/orders/records", header: fromApp, ctype: "text/plain", body: "b"})
	if r.status != 200 {
		t.Fatalf("text/plain append from %s: %d\n%s", app, r.status, r.body)
	}

	before := e.dbState()
	other := map[string]string{"Origin": "http://elsewhere.example", "Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "cors"}
	pre = e.send(request{method: "OPTIONS", path: "/api/topics/orders/records", header: map[string]string{"Origin": "http://elsewhere.example", "Access-Control-Request-Method": "POST"}})
	if h := pre.header.Get("Access-Control-Allow-Origin"); h != "" || pre.header.Get("Access-Control-Allow-Methods") != "" {
		t.Errorf("preflight of another origin: %d %v", pre.status, pre.header)
	}
	r = e.send(request{method: "POST", path: "/api/topics/orders/records", header: other, ctype: "application/json", body: `{"records":[{"value":"c"}]}`})
	e.want(r, 403, CodeCrossOrigin)
	if h := r.header.Get("Access-Control-Allow-Origin"); h != "" {
		t.Errorf("Access-Control-Allow-Origin for another origin: %s", h)
	}
	if after := e.dbState(); after != before {
		t.Errorf("the state changed:\n%s\nwas:\n%s", after, before)
	}
}

func TestValidateOrigin(t *testing.T) {
	for _, c := range []struct {
		in string
		ok bool
	}{
		{"https://app.example", true},
		{"http://localhost:3000", true},
		{"*", false},
		{"app.example", false},
		{"https://app.example/path", false},
		{"ftp://app.example", false},
		{"https://user@app.example", false},
	} {
		if err := ValidateOrigin(c.in); (err == nil) != c.ok {
			t.Errorf("ValidateOrigin(%q) = %v, want ok %v", c.in, err, c.ok)
		}
	}
}

// FuzzGuard: whatever the headers, the guard never lets through a write
// that a browser marks as cross-site or whose Origin names another host,
// nor a Host it does not answer to, and it never panics.
func FuzzGuard(f *testing.F) {
	f.Add("POST", "127.0.0.1:8080", "http://127.0.0.1:8080", "", "same-origin", "text/plain")
	f.Add("DELETE", "attacker.example:8080", "http://attacker.example:8080", "", "same-origin", "")
	f.Add("POST", "localhost", "", "http://evil.example/x", "", "application/json")
	f.Add("PUT", "[::1]:1", "null", "", "cross-site", "multipart/form-data; boundary=x")
	f.Add("POST", "LOCALHOST.", "http://LocalHost.", "", "", "TEXT/PLAIN;;")
	// A server for its guard only: no DB, never served.
	o := (&Options{}).withDefaults()
	s := &Server{o: o, log: o.Logger, reg: prometheus.NewRegistry()}
	s.guard = newGuard(s)
	f.Fuzz(func(t *testing.T, method, host, origin, referer, sfs, ctype string) {
		req, err := http.NewRequest("GET", "http://x/api/topics/orders/records", nil)
		if err != nil {
			return
		}
		req.Method, req.Host = method, host
		for k, v := range map[string]string{"Origin": origin, "Referer": referer, "Sec-Fetch-Site": sfs, "Content-Type": ctype} {
			if v != "" {
				req.Header.Set(k, v)
			}
		}
		w := httptest.NewRecorder()
		if !s.guard.check(w, req) {
			if w.Code < 400 && w.Code != http.StatusNoContent {
				t.Fatalf("refused with %d", w.Code)
			}
			return
		}
		if !s.guard.hostAllowed(req) && !s.guard.anyHost {
			t.Fatalf("Host %q let through", host)
		}
		if safeMethod(method) {
			return
		}
		if sfs == "cross-site" || sfs == "same-site" {
			t.Fatalf("%s with Sec-Fetch-Site %q let through", method, sfs)
		}
		if origin != "" && sfs == "" {
			if u, err := url.Parse(origin); err != nil || u.Host != host {
				t.Fatalf("%s from Origin %q to Host %q let through", method, origin, host)
			}
		}
		if simpleContentType(req) && sfs != "same-origin" && origin == "" {
			t.Fatalf("%s with Content-Type %q and no origin let through", method, ctype)
		}
	})
}
