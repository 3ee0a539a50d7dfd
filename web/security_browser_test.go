package web

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/passbook-log/passbook/offsets"
)

// The dashboard on a server that requires credentials, in headless
// Chromium: the sign-in form takes the page's place and no data shows; a
// wrong password says so; the right one shows the data and who is
// signed in; signing out brings the form back.
func TestDashboard_Browser_SignIn(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping the browser test in -short mode")
	}
	b := startBrowser(t, 1200, 800)
	e := newAuthEnv(t, false, nil)
	fill(t, e.createTopic("orders", 1), 0, 5)
	if err := e.db.Offsets().Commit(context.Background(), offsets.Key{Consumer: "billing", Topic: "orders", Partition: 0}, 2); err != nil {
		t.Fatal(err)
	}

	b.navigate(e.url + "/")
	b.waitFor(`!document.getElementById("signin").hidden && document.getElementById("main").hidden`, 10*time.Second)
	var shown struct {
		Tapes int
		Who   bool
	}
	b.eval(`({tapes: document.querySelectorAll(".tape").length, who: !document.getElementById("who").hidden})`, &shown)
	if shown.Tapes != 0 || shown.Who {
		t.Errorf("before signing in the page shows %+v", shown)
	}

	signIn := func(user, password string) {
		b.eval(`(() => { document.getElementById("signin-user").value = "`+user+`"; document.getElementById("signin-password").value = "`+password+`";
			document.querySelector("#signin-form button").click(); })()`, nil)
	}
	signIn("alice", "wrong")
	b.waitFor(`!document.getElementById("signin-error").hidden`, 10*time.Second)
	var msg string
	b.eval(`document.getElementById("signin-error").textContent`, &msg)
	if msg != "Invalid user name or password." {
		t.Errorf("after a wrong password the form says %q", msg)
	}

	signIn("alice", "alice-pw")
	b.waitFor(`document.querySelector('.tape[data-topic="orders"][data-head="5"]') && document.querySelector('.cursor[data-consumer="billing"][data-offset="2"]')`, 10*time.Second)
	var who struct {
		Name    string
		Signout bool
		Signin  bool
	}
	b.eval(`({name: document.getElementById("who-name").textContent, signout: !document.getElementById("signout").hidden, signin: !document.getElementById("signin").hidden})`, &who)
	if who.Name != "alice" || !who.Signout || who.Signin {
		t.Errorf("signed in, the bar shows %+v", who)
	}
	// The data follows appends, through the cookie on the event stream.
	fill(t, mustTopic(t, e.env, "orders"), 0, 1)
	b.waitFor(`document.querySelector('.tape[data-topic="orders"][data-head="6"]')`, 10*time.Second)

	b.eval(`document.getElementById("signout").click()`, nil)
	b.waitFor(`document.readyState === "complete" && !document.getElementById("signin").hidden && !document.querySelector(".tape")`, 10*time.Second)
	if r := e.send(request{method: "GET", path: "/api/topics"}); r.status != 401 {
		t.Errorf("after signing out: %d", r.status)
	}
	// The page's own 401s asked for no browser pop-up: the failures of
	// the page's fetches are all without WWW-Authenticate (challenge).
	if m := string(e.get("/metrics").body); !strings.Contains(m, `passbook_http_auth_failures_total{method="login"} 1`) {
		t.Errorf("/metrics: the failed sign-in is not counted")
	}
}

// The dashboard on loopback without authentication shows its data and
// no sign-in.
func TestDashboard_Browser_NoSignIn(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping the browser test in -short mode")
	}
	b := startBrowser(t, 1200, 800)
	e := newEnv(t, nil)
	fill(t, e.createTopic("orders", 1), 0, 3)
	b.navigate(e.url + "/")
	b.waitFor(`document.querySelector('.tape[data-topic="orders"][data-head="3"]')`, 10*time.Second)
	var hidden struct{ Signin, Who bool }
	b.eval(`({signin: document.getElementById("signin").hidden, who: document.getElementById("who").hidden})`, &hidden)
	if !hidden.Signin || !hidden.Who {
		t.Errorf("without authentication: sign-in hidden %v, user hidden %v", hidden.Signin, hidden.Who)
	}
}

// attackerPage is served by another origin: it tries, through the
// user's browser, everything the issue found possible, and writes down
// what each attempt gave.
const attackerPage = `<!doctype html><html><body>
<iframe name="sink"></iframe>
<form id="f" action="VICTIM/api/topics/orders/records" method="POST" enctype="text/plain" target="sink"><input name="x" value="pwned"></form>
<form id="g" action="VICTIM/api/topics" method="POST" enctype="application/x-www-form-urlencoded" target="sink"><input name="name" value="evil"></form>
<script>
const victim = "VICTIM";
const results = {};
const tryIt = async (name, f) => { try { const r = await f(); results[name] = r.type + " " + r.status; } catch (e) { results[name] = "error " + e.name; } };
(async () => {
  await tryIt("text/plain append", () => fetch(victim + "/api/topics/orders/records", {method: "POST", mode: "no-cors", headers: {"Content-Type": "text/plain"}, body: "pwned"}));
  await tryIt("text/plain create", () => fetch(victim + "/api/topics", {method: "POST", mode: "no-cors", headers: {"Content-Type": "text/plain"}, body: '{"name":"evil"}'}));
  await tryIt("JSON append", () => fetch(victim + "/api/topics/orders/records", {method: "POST", headers: {"Content-Type": "application/json"}, body: '{"records":[{"value":"pwned"}]}'}));
  await tryIt("DELETE", () => fetch(victim + "/api/topics/orders", {method: "DELETE"}));
  await tryIt("no-cors DELETE", () => fetch(victim + "/api/topics/orders", {method: "DELETE", mode: "no-cors"}));
  await tryIt("reset", () => fetch(victim + "/api/consumers/billing/topics/orders/reset", {method: "POST", mode: "no-cors", headers: {"Content-Type": "text/plain"}, body: '{"to":"latest"}'}));
  await tryIt("read", () => fetch(victim + "/api/topics"));
  document.getElementById("f").submit();
  await new Promise((r) => setTimeout(r, 300));
  document.getElementById("g").submit();
  await new Promise((r) => setTimeout(r, 300));
  window.results = results;
  document.body.dataset.done = "1";
})();
</script></body></html>`

// A page served from another origin (another server, on another port and
// host name) fetches and form-posts to the API through the browser:
// nothing changes, and it reads nothing. And the dashboard reached
// under a name rebound to 127.0.0.1 does not load.
func TestDashboard_Browser_CrossOriginPage(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping the browser test in -short mode")
	}
	// attacker.test resolves to 127.0.0.1, as a rebinding DNS would.
	b := startBrowser(t, 1000, 700, "--host-resolver-rules=MAP attacker.test 127.0.0.1")
	e, self := newGuardEnv(t, nil)
	_, port, _ := strings.Cut(self, ":")

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	page := strings.ReplaceAll(attackerPage, "VICTIM", e.url)
	evil := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte(page))
	}), ReadHeaderTimeout: 10 * time.Second}
	go evil.Serve(ln)
	t.Cleanup(func() { evil.Close() })
	_, evilPort, _ := net.SplitHostPort(ln.Addr().String())

	before := e.dbState()
	// localhost is another site than 127.0.0.1: the browser says cross-site.
	b.navigate("http://localhost:" + evilPort + "/")
	b.waitFor(`document.body.dataset.done === "1"`, 20*time.Second)
	var results map[string]string
	b.eval(`window.results`, &results)
	t.Logf("what the attacker's page got: %v", results)
	if r := results["read"]; !strings.HasPrefix(r, "error") {
		t.Errorf("the page read the topic list: %s", r)
	}
	if r := results["JSON append"]; !strings.HasPrefix(r, "error") {
		t.Errorf("a JSON append went through: %s", r)
	}
	// The form posts land in the iframe; wait for the server to have
	// answered both before comparing.
	waitRefused(t, e, 5)
	if after := e.dbState(); after != before {
		t.Errorf("the attacker's page changed the state:\n%s\nwas:\n%s", after, before)
	}

	// Rebinding: the dashboard under the attacker's name, on our port.
	b.navigate("http://attacker.test:" + port + "/")
	var text string
	b.eval(`document.body.innerText`, &text)
	if !strings.Contains(text, "misdirected_request") {
		t.Errorf("under a rebound name the page shows %q", text)
	}
	var tapes int
	b.eval(`document.querySelectorAll(".tape").length`, &tapes)
	if tapes != 0 {
		t.Errorf("under a rebound name the dashboard drew %d tapes", tapes)
	}
	if after := e.dbState(); after != before {
		t.Errorf("the state changed:\n%s\nwas:\n%s", after, before)
	}
}

// waitRefused waits until the guard has refused at least n writes from
// other origins (each answered before it is counted).
func waitRefused(t *testing.T, e *env, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		m := string(e.get("/metrics").body)
		var got int
		for _, reason := range []string{refusedCrossOrigin, refusedContentType} {
			key := `passbook_http_guard_refused_total{reason="` + reason + `"} `
			if i := strings.Index(m, key); i >= 0 {
				rest := m[i+len(key):]
				v, _ := strconv.Atoi(rest[:strings.IndexByte(rest, '\n')])
				got += v
			}
		}
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the guard refused %d requests, want at least %d", got, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
