package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/passbook-log/passbook/internal/testcerts"
)

// httpReq is one request to a served process's HTTP API.
type httpReq struct {
	method, path string
	host         string
	header       map[string]string
	ctype, body  string
}

// do sends rq to p's HTTP listener and returns the status and body.
func (p *servedProc) do(t *testing.T, rq httpReq) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(rq.method, "http://"+p.httpAddr+rq.path, strings.NewReader(rq.body))
	if err != nil {
		t.Fatal(err)
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
	res, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, string(b)
}

// apiState is what a request could have changed, as the API shows it to
// a client allowed to see everything: the topics and their heads.
func (p *servedProc) apiState(t *testing.T, header map[string]string) string {
	t.Helper()
	code, _, body := p.do(t, httpReq{method: "GET", path: "/api/topics", header: header})
	if code != 200 {
		t.Fatalf("list topics: %d %s", code, body)
	}
	var v struct {
		Topics []struct {
			Name       string
			Partitions []struct{ Head int64 }
		}
	}
	json.Unmarshal([]byte(body), &v)
	var b strings.Builder
	for _, tp := range v.Topics {
		fmt.Fprintf(&b, "%s:", tp.Name)
		for _, pt := range tp.Partitions {
			fmt.Fprintf(&b, " %d", pt.Head)
		}
		b.WriteString("\n")
	}
	return b.String()
}

func errCode(body string) string {
	var v struct{ Error struct{ Code string } }
	json.Unmarshal([]byte(body), &v)
	return v.Error.Code
}

// The browser cases against `passbook serve --http 127.0.0.1:PORT`
// on loopback, without authentication: each is refused and nothing
// changes; the dashboard's own requests and curl pass.
func TestServe_HTTP_BrowserSafety(t *testing.T) {
	p := startServe(t, "--http-allowed-hosts", "passbook.internal")
	p.createTopicHTTP(t, "orders")
	p.httpRound(t, "orders", 0)
	_, port, _ := strings.Cut(p.httpAddr, ":")
	evil := map[string]string{"Origin": "http://attacker.example", "Sec-Fetch-Site": "cross-site"}
	before := p.apiState(t, nil)
	for _, c := range []struct {
		name   string
		rq     httpReq
		status int
		code   string
	}{
		{"cross-origin simple POST", httpReq{method: "POST", path: "/api/topics/orders/records", header: evil, ctype: "text/plain", body: "pwned"}, 403, "cross_origin"},
		{"cross-origin DELETE", httpReq{method: "DELETE", path: "/api/topics/orders", header: evil}, 403, "cross_origin"},
		{"simple POST without an origin", httpReq{method: "POST", path: "/api/topics", ctype: "application/x-www-form-urlencoded", body: "name=evil"}, 415, "unsupported_media_type"},
		{"foreign Host", httpReq{method: "POST", path: "/api/topics", host: "attacker.example", ctype: "application/json", body: `{"name":"evil"}`}, 421, "misdirected_request"},
		{"rebinding to the right port", httpReq{method: "DELETE", path: "/api/topics/orders", host: "attacker.example:" + port,
			header: map[string]string{"Origin": "http://attacker.example:" + port, "Sec-Fetch-Site": "same-origin"}}, 421, "misdirected_request"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, h, body := p.do(t, c.rq)
			if code != c.status || errCode(body) != c.code {
				t.Fatalf("got %d %s, want %d %s", code, body, c.status, c.code)
			}
			if h.Get("Access-Control-Allow-Origin") != "" {
				t.Errorf("Access-Control-Allow-Origin: %s", h.Get("Access-Control-Allow-Origin"))
			}
			if after := p.apiState(t, nil); after != before {
				t.Errorf("the state changed:\n%s\nwas:\n%s", after, before)
			}
		})
	}
	if got := p.metric(t, `passbook_http_guard_refused_total{reason="host"}`); got != 2 {
		t.Errorf("refused for their Host: %v, want 2", got)
	}
	own := map[string]string{"Origin": "http://" + p.httpAddr, "Sec-Fetch-Site": "same-origin"}
	for _, rq := range []httpReq{
		{method: "POST", path: "/api/topics/orders/records", header: own, ctype: "text/plain", body: "from the dashboard"},
		{method: "POST", path: "/api/topics/orders/records", ctype: "application/octet-stream", body: "from curl"},
		{method: "GET", path: "/api/topics", host: "localhost:" + port},
		{method: "GET", path: "/api/topics", host: "passbook.internal:" + port},
	} {
		if code, _, body := p.do(t, rq); code != 200 {
			t.Errorf("%s %s (Host %q, %v): %d %s", rq.method, rq.path, rq.host, rq.header, code, body)
		}
	}
}

// --http-cors-origin: that origin's pages may call the API, no other.
func TestServe_HTTP_CORS(t *testing.T) {
	app := "http://app.example:3000"
	p := startServe(t, "--http-cors-origin", app)
	p.createTopicHTTP(t, "orders")
	code, h, _ := p.do(t, httpReq{method: "OPTIONS", path: "/api/topics/orders/records", header: map[string]string{"Origin": app, "Access-Control-Request-Method": "POST"}})
	if code != 204 || h.Get("Access-Control-Allow-Origin") != app || !strings.Contains(h.Get("Access-Control-Allow-Methods"), "POST") {
		t.Errorf("preflight from %s: %d %v", app, code, h)
	}
	code, h, body := p.do(t, httpReq{method: "POST", path: "/api/topics/orders/records", ctype: "application/json", body: `{"records":[{"value":"x"}]}`,
		header: map[string]string{"Origin": app, "Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "cors"}})
	if code != 200 || h.Get("Access-Control-Allow-Origin") != app {
		t.Errorf("append from %s: %d %v %s", app, code, h, body)
	}
	code, h, body = p.do(t, httpReq{method: "POST", path: "/api/topics/orders/records", ctype: "application/json", body: `{"records":[{"value":"x"}]}`,
		header: map[string]string{"Origin": "http://other.example", "Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "cors"}})
	if code != 403 || h.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("append from another origin: %d %v %s", code, h, body)
	}
}

func basicAuth(user, password string) map[string]string {
	return map[string]string{"Authorization": "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+password))}
}

// Authentication and ACLs through the binary: users, tokens and ACLs
// made with passbook user|token|acl while serve runs take effect, and
// each wrong way in is 401.
func TestServe_HTTP_AuthAndACLs(t *testing.T) {
	dir := t.TempDir()
	for _, u := range []string{"admin", "bob"} {
		if _, stderr, code := runBinary(t, dir, u+"-pw\n", "--data", dir, "user", "add", u, "--password-stdin"); code != 0 {
			t.Fatalf("user add %s: exit %d: %s", u, code, stderr)
		}
	}
	p, _, _ := launchServe(t, dir, 20*time.Second, 15*time.Second, "--authorize", "--super-users", "User:admin", "--http-metrics-auth")
	admin, bob := basicAuth("admin", "admin-pw"), basicAuth("bob", "bob-pw")

	if code, h, body := p.do(t, httpReq{method: "GET", path: "/api/topics"}); code != 401 || errCode(body) != "unauthorized" || !strings.Contains(h.Get("WWW-Authenticate"), `Basic realm="passbook"`) {
		t.Fatalf("no credentials: %d %v %s", code, h, body)
	}
	if code, _, _ := p.do(t, httpReq{method: "GET", path: "/metrics"}); code != 401 {
		t.Errorf("/metrics without credentials under --http-metrics-auth: %d", code)
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		if code, _, _ := p.do(t, httpReq{method: "GET", path: path}); code != 200 {
			t.Errorf("GET %s: %d", path, code)
		}
	}
	if code, _, body := p.do(t, httpReq{method: "POST", path: "/api/topics", header: admin, ctype: "application/json", body: `{"name":"orders"}`}); code != 201 {
		t.Fatalf("the super user creates a topic: %d %s", code, body)
	}
	if code, _, body := p.do(t, httpReq{method: "GET", path: "/api/topics", header: basicAuth("bob", "wrong")}); code != 401 {
		t.Errorf("a wrong password: %d %s", code, body)
	}

	// bob has no ACL: he sees no topic and may not append.
	if got := p.apiState(t, bob); got != "" {
		t.Errorf("bob, without ACLs, sees topics:\n%s", got)
	}
	appendRq := httpReq{method: "POST", path: "/api/topics/orders/records", header: bob, ctype: "application/json", body: `{"records":[{"value":"b"}]}`}
	if code, _, body := p.do(t, appendRq); code != 403 || errCode(body) != "forbidden" || !strings.Contains(body, "WRITE") {
		t.Errorf("bob appends without an ACL: %d %s", code, body)
	}
	// An ACL added while serve runs is seen within a second or so.
	if _, stderr, code := runBinary(t, dir, "", "--data", dir, "acl", "add", "--allow", "User:bob", "--producer", "--topic", "orders"); code != 0 {
		t.Fatalf("acl add: exit %d: %s", code, stderr)
	}
	waitStatus(t, p, appendRq, 200)
	if got := p.apiState(t, bob); !strings.HasPrefix(got, "orders:") {
		t.Errorf("bob, a producer on orders, sees:\n%s", got)
	}

	// A token works until revoked.
	out, stderr, code := runBinary(t, dir, "", "--data", dir, "token", "create", "ci", "--user", "admin")
	if code != 0 {
		t.Fatalf("token create: exit %d: %s", code, stderr)
	}
	token := map[string]string{"Authorization": "Bearer " + strings.TrimSpace(out)}
	tokRq := httpReq{method: "GET", path: "/api/topics", header: token}
	waitStatus(t, p, tokRq, 200)
	if _, stderr, code := runBinary(t, dir, "", "--data", dir, "token", "revoke", "ci"); code != 0 {
		t.Fatalf("token revoke: exit %d: %s", code, stderr)
	}
	waitStatus(t, p, tokRq, 401)

	// The dashboard's sign-in.
	code2, h, body := p.do(t, httpReq{method: "POST", path: "/api/login", ctype: "application/json", body: `{"user":"bob","password":"bob-pw"}`,
		header: map[string]string{"Origin": "http://" + p.httpAddr, "Sec-Fetch-Site": "same-origin"}})
	if code2 != 200 || !strings.Contains(h.Get("Set-Cookie"), "passbook_session=") || !strings.Contains(h.Get("Set-Cookie"), "HttpOnly") {
		t.Fatalf("login: %d %v %s", code2, h, body)
	}
	cookie := map[string]string{"Cookie": strings.Split(h.Get("Set-Cookie"), ";")[0]}
	if code, _, body := p.do(t, httpReq{method: "GET", path: "/api/whoami", header: cookie}); code != 200 || !strings.Contains(body, `"user":"bob"`) {
		t.Errorf("whoami with the cookie: %d %s", code, body)
	}
	// /metrics under --http-metrics-auth: for the super user.
	code3, _, m := p.do(t, httpReq{method: "GET", path: "/metrics", header: admin})
	if code3 != 200 || !strings.Contains(m, `passbook_http_authorization_denied_total{operation="WRITE",resource_type="TOPIC"} `) ||
		!strings.Contains(m, `passbook_http_auth_failures_total{method="basic"} 1`) {
		var lines []string
		for _, l := range strings.Split(m, "\n") {
			if strings.HasPrefix(l, "passbook_http_auth") {
				lines = append(lines, l)
			}
		}
		t.Errorf("/metrics as admin: %d; denials and failures not counted as expected:\n%s", code3, strings.Join(lines, "\n"))
	}
}

// waitStatus repeats rq until it is answered status: files changed by
// another process are seen within a second or so.
func waitStatus(t *testing.T, p *servedProc, rq httpReq, status int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, _, body := p.do(t, rq)
		if code == status {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s %s still answered %d %s, want %d", rq.method, rq.path, code, body, status)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Under --tls-cert the HTTP API is HTTPS only, and the sign-in cookie
// is Secure.
func TestServe_HTTP_TLS(t *testing.T) {
	dir := t.TempDir()
	certs := testcerts.Write(t, t.TempDir(), "client")
	if _, stderr, code := runBinary(t, dir, "alice-pw\n", "--data", dir, "user", "add", "alice", "--password-stdin"); code != 0 {
		t.Fatalf("user add: exit %d: %s", code, stderr)
	}
	p, _, _ := launchServe(t, dir, 20*time.Second, 15*time.Second, "--tls-cert", certs.CertFile, "--tls-key", certs.KeyFile, "--authorize", "--super-users", "User:alice")
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: certs.ClientConfig(false)}}
	base := "https://" + p.httpAddr
	req, _ := http.NewRequest("POST", base+"/api/login", strings.NewReader(`{"user":"alice","password":"alice-pw"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", base)
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if cs := res.Cookies(); res.StatusCode != 200 || len(cs) != 1 || !cs[0].Secure || !cs[0].HttpOnly || cs[0].SameSite != http.SameSiteStrictMode {
		t.Fatalf("login over TLS: %d %v", res.StatusCode, res.Cookies())
	}
	req, _ = http.NewRequest("GET", base+"/api/topics", nil)
	req.SetBasicAuth("alice", "alice-pw")
	if res, err := c.Do(req); err != nil || res.StatusCode != 200 {
		t.Fatalf("GET /api/topics over TLS: %v %v", res, err)
	} else {
		res.Body.Close()
	}
	// Plain HTTP on the same port is not served.
	if res, err := (&http.Client{Timeout: 10 * time.Second}).Get("http://" + p.httpAddr + "/api/topics"); err == nil {
		res.Body.Close()
		if res.StatusCode == 200 {
			t.Error("plain HTTP answered 200 on the TLS port")
		}
	}
}
