package web

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/acl"
	"github.com/passbook-log/passbook/auth"
	"github.com/passbook-log/passbook/internal/testcerts"
	"github.com/passbook-log/passbook/offsets"
)

// authEnv is a server requiring credentials, with users alice and bob
// (passwords alice-pw and bob-pw) and, with acls, the ACLs enforced
// (super user User:admin).
type authEnv struct {
	*env
	users  *auth.Users
	tokens *auth.Tokens
	acls   *acl.Store
}

// optional, as newAuthEnv's last argument: credentials are not required.
const optional = "optional"

func newAuthEnv(t *testing.T, acls bool, opts *Options, flags ...string) *authEnv {
	t.Helper()
	dir := t.TempDir()
	users, err := auth.OpenUsers(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"alice", "bob", "admin"} {
		if err := users.Set(u, auth.SCRAMSHA256, []byte(u+"-pw"), 0); err != nil {
			t.Fatal(err)
		}
	}
	tokens, err := auth.OpenTokens(dir)
	if err != nil {
		t.Fatal(err)
	}
	store, err := acl.OpenStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	if opts == nil {
		opts = &Options{}
	}
	opts.Users, opts.Tokens, opts.RequireAuth = users, tokens, !slices.Contains(flags, optional)
	if acls {
		opts.Authorizer = acl.NewAuthorizer(store, []string{"User:admin"}, nil)
	}
	return &authEnv{env: newEnv(t, opts), users: users, tokens: tokens, acls: store}
}

func basic(user, password string) map[string]string {
	return map[string]string{"Authorization": "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+password))}
}

func bearer(secret string) map[string]string {
	return map[string]string{"Authorization": "Bearer " + secret}
}

// with returns h and the pairs kv added.
func with(h map[string]string, kv ...string) map[string]string {
	out := map[string]string{}
	for k, v := range h {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

// login signs user in and returns the session cookie's header.
func (e *authEnv) login(user, password string) (response, map[string]string) {
	e.t.Helper()
	r := e.send(request{method: "POST", path: "/api/login", ctype: "application/json", body: `{"user":"` + user + `","password":"` + password + `"}`,
		header: map[string]string{"Origin": e.url, "Sec-Fetch-Site": "same-origin"}})
	for _, c := range (&http.Response{Header: r.header}).Cookies() {
		if c.Name == sessionCookie {
			return r, map[string]string{"Cookie": c.Name + "=" + c.Value}
		}
	}
	return r, nil
}

// Each way in is accepted, and a wrong one is 401 — with the same
// message for an unknown user as for a wrong password.
func TestAuth_Credentials(t *testing.T) {
	e := newAuthEnv(t, false, nil)
	e.createTopic("orders", 1)
	token, err := e.tokens.Create("ci", "alice")
	if err != nil {
		t.Fatal(err)
	}
	revoked, err := e.tokens.Create("old", "alice")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.tokens.Revoke("old"); err != nil {
		t.Fatal(err)
	}
	lr, cookie := e.login("alice", "alice-pw")
	e.want(lr, 200, "")
	_, ended := e.login("bob", "bob-pw")
	e.want(e.send(request{method: "POST", path: "/api/logout", header: with(ended, "Origin", e.url)}), 204, "")

	const topics = "/api/topics"
	fetch := map[string]string{"Sec-Fetch-Mode": "cors", "Sec-Fetch-Site": "same-origin"}
	for _, c := range []struct {
		name      string
		header    map[string]string
		status    int
		user      string // whoami's, when accepted
		challenge bool   // WWW-Authenticate expected
	}{
		{"no credentials (curl)", nil, 401, "", true},
		{"no credentials (the dashboard's fetch)", fetch, 401, "", false},
		{"no credentials (X-Requested-With)", map[string]string{"X-Requested-With": "XMLHttpRequest"}, 401, "", false},
		{"Basic", basic("alice", "alice-pw"), 200, "alice", false},
		{"Basic, wrong password", basic("alice", "bob-pw"), 401, "", true},
		{"Basic, unknown user", basic("mallory", "alice-pw"), 401, "", true},
		{"Basic, malformed", map[string]string{"Authorization": "Basic !!!"}, 401, "", true},
		{"Bearer", bearer(token), 200, "alice", false},
		{"Bearer, unknown", bearer("pbk_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"), 401, "", true},
		{"Bearer, revoked", bearer(revoked), 401, "", true},
		{"an unknown scheme", map[string]string{"Authorization": "Digest x"}, 401, "", true},
		{"session cookie", cookie, 200, "alice", false},
		{"session cookie, from the dashboard", with(cookie, "Sec-Fetch-Mode", "cors", "Sec-Fetch-Site", "same-origin"), 200, "alice", false},
		{"session cookie after logout", ended, 401, "", true},
		{"made-up session cookie", map[string]string{"Cookie": sessionCookie + "=AAAA"}, 401, "", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := e.with(t)
			r := e.send(request{method: "GET", path: topics, header: c.header})
			if r.status != c.status {
				t.Fatalf("got %d, want %d\n%s", r.status, c.status, r.body)
			}
			if got := r.header.Get("WWW-Authenticate") != ""; got != c.challenge {
				t.Errorf("WWW-Authenticate %q, want one: %v", r.header.Get("WWW-Authenticate"), c.challenge)
			}
			if c.status == 401 {
				e.want(r, 401, CodeUnauthorized)
				return
			}
			var who whoami
			e.send(request{method: "GET", path: "/api/whoami", header: c.header}).decode(t, &who)
			if who.User == nil || *who.User != c.user || !who.AuthRequired {
				t.Errorf("whoami: %+v", who)
			}
		})
	}
	wrong := e.send(request{method: "GET", path: topics, header: basic("alice", "nope")})
	unknown := e.send(request{method: "GET", path: topics, header: basic("nobody", "nope")})
	if string(wrong.body) != string(unknown.body) {
		t.Errorf("a wrong password and an unknown user answer differently:\n%s\n%s", wrong.body, unknown.body)
	}
	lw, _ := e.login("alice", "nope")
	lu, _ := e.login("nobody", "nope")
	e.want(lw, 401, CodeUnauthorized)
	if string(lw.body) != string(lu.body) {
		t.Errorf("failed logins answer differently:\n%s\n%s", lw.body, lu.body)
	}

	// Open without credentials: health, readiness, metrics, the API's
	// description, whoami, and the dashboard's files.
	for _, p := range []string{"/healthz", "/readyz", "/metrics", "/api/openapi.json", "/api/whoami", "/", "/app.js"} {
		if r := e.get(p); r.status != 200 {
			t.Errorf("GET %s without credentials: %d\n%s", p, r.status, r.body)
		}
	}
	var who whoami
	e.get("/api/whoami").decode(t, &who)
	if who.User != nil || !who.AuthRequired || who.ACLs {
		t.Errorf("anonymous whoami: %+v", who)
	}
	m := string(e.get("/metrics").body)
	for _, want := range []string{`passbook_http_auth_failures_total{method="basic"} 6`, `passbook_http_auth_failures_total{method="bearer"} 2`,
		`passbook_http_auth_failures_total{method="none"} 3`, `passbook_http_auth_failures_total{method="session"} 2`, `passbook_http_auth_failures_total{method="login"} 2`} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// The session cookie: HttpOnly, SameSite=Strict, Path=/, a random
// 32-byte id; and a login only from our own page.
func TestAuth_Login(t *testing.T) {
	e := newAuthEnv(t, false, nil)
	r, _ := e.login("alice", "alice-pw")
	e.want(r, 200, "")
	cs := (&http.Response{Header: r.header}).Cookies()
	if len(cs) != 1 {
		t.Fatalf("cookies %v", cs)
	}
	c := cs[0]
	id, err := base64.RawURLEncoding.DecodeString(c.Value)
	if c.Name != sessionCookie || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/" || c.Secure || err != nil || len(id) != 32 {
		t.Errorf("cookie %+v (id %d bytes, %v)", c, len(id), err)
	}
	_, again := e.login("alice", "alice-pw")
	if again["Cookie"] == sessionCookie+"="+c.Value {
		t.Error("two logins got the same session id")
	}
	for _, h := range []map[string]string{
		{"Origin": "http://attacker.example"},
		{"Origin": "http://attacker.example", "Sec-Fetch-Site": "cross-site"},
		{"Sec-Fetch-Site": "same-site"},
	} {
		r := e.send(request{method: "POST", path: "/api/login", ctype: "application/json", body: `{"user":"alice","password":"alice-pw"}`, header: h})
		e.want(r, 403, CodeCrossOrigin)
		if r.header.Get("Set-Cookie") != "" {
			t.Errorf("a cross-origin login set a cookie: %s", r.header.Get("Set-Cookie"))
		}
	}
	// A deleted user's session ends.
	_, bob := e.login("bob", "bob-pw")
	e.want(e.send(request{method: "GET", path: "/api/topics", header: bob}), 200, "")
	if err := e.users.Delete("bob", ""); err != nil {
		t.Fatal(err)
	}
	e.s.authn.mu.Lock()
	for _, n := range e.s.authn.mu.sessions {
		n.checked = time.Time{} // as if the last check were long ago
	}
	e.s.authn.mu.Unlock()
	e.want(e.send(request{method: "GET", path: "/api/topics", header: bob}), 401, CodeUnauthorized)

	// So does a deleted user's token.
	if err := e.users.Set("carol", auth.SCRAMSHA256, []byte("carol-pw"), 0); err != nil {
		t.Fatal(err)
	}
	token, err := e.tokens.Create("carols", "carol")
	if err != nil {
		t.Fatal(err)
	}
	bearer := map[string]string{"Authorization": "Bearer " + token}
	e.want(e.send(request{method: "GET", path: "/api/topics", header: bearer}), 200, "")
	if err := e.users.Delete("carol", ""); err != nil {
		t.Fatal(err)
	}
	e.want(e.send(request{method: "GET", path: "/api/topics", header: bearer}), 401, CodeUnauthorized)
}

// Sessions are bounded: past maxSessions the oldest ends.
func TestAuth_SessionsBounded(t *testing.T) {
	e := newAuthEnv(t, false, nil)
	first, err := e.s.authn.newSession("alice")
	if err != nil {
		t.Fatal(err)
	}
	for range maxSessions {
		if _, err := e.s.authn.newSession("alice"); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(e.s.authn.mu.sessions); n != maxSessions {
		t.Errorf("%d sessions kept, want %d", n, maxSessions)
	}
	if _, err := e.s.authn.session(first); err == nil {
		t.Error("the oldest session survived the limit")
	}
}

// With Options.MetricsAuth, /metrics needs credentials and DESCRIBE on
// the cluster.
func TestAuth_MetricsAuth(t *testing.T) {
	e := newAuthEnv(t, true, &Options{MetricsAuth: true})
	e.want(e.get("/metrics"), 401, CodeUnauthorized)
	e.want(e.send(request{method: "GET", path: "/metrics", header: basic("alice", "alice-pw")}), 403, CodeForbidden)
	if err := e.acls.Add(acl.Binding{ResourceType: acl.Cluster, Name: acl.ClusterName, Pattern: acl.Literal, Principal: "User:alice", Host: "*", Operation: acl.Describe, Permission: acl.Allow}); err != nil {
		t.Fatal(err)
	}
	if r := e.send(request{method: "GET", path: "/metrics", header: basic("alice", "alice-pw")}); r.status != 200 || !strings.Contains(string(r.body), "passbook_http_guard_refused_total") {
		t.Errorf("/metrics with DESCRIBE on the cluster: %d", r.status)
	}
	for _, p := range []string{"/healthz", "/readyz"} {
		if r := e.get(p); r.status != 200 {
			t.Errorf("GET %s: %d", p, r.status)
		}
	}
}

// Under TLS (Options.TLS, served by Serve) the session cookie is Secure.
func TestAuth_TLS(t *testing.T) {
	certs := testcerts.Write(t, t.TempDir(), "client")
	dir := t.TempDir()
	users, _ := auth.OpenUsers(dir)
	if err := users.Set("alice", auth.SCRAMSHA512, []byte("alice-pw"), 0); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, nil) // for its DB
	s := NewServer(e.db, &Options{TLS: certs.ServerConfig(false), Users: users, RequireAuth: true})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(ln)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		s.Shutdown(ctx)
	})
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Transport: &http.Transport{TLSClientConfig: certs.ClientConfig(false)}}
	base := "https://" + ln.Addr().String()
	req, _ := http.NewRequest("POST", base+"/api/login", strings.NewReader(`{"user":"alice","password":"alice-pw"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", base)
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || len(res.Cookies()) != 1 || !res.Cookies()[0].Secure {
		t.Fatalf("login over TLS: %d %v", res.StatusCode, res.Cookies())
	}
	res, err = c.Get(base + "/api/whoami")
	if err != nil {
		t.Fatal(err)
	}
	var who whoami
	json.NewDecoder(res.Body).Decode(&who)
	res.Body.Close()
	if who.User == nil || *who.User != "alice" || who.Method != authSession {
		t.Errorf("whoami over TLS with the cookie: %+v", who)
	}
	// Plain HTTP to the TLS port is not served.
	if res, err := http.Get("http://" + ln.Addr().String() + "/api/topics"); err == nil {
		if res.StatusCode == 200 {
			t.Error("plain HTTP served on the TLS listener")
		}
		res.Body.Close()
	}
}

// grant allows principal op on a literal resource.
func (e *authEnv) grant(principal string, op acl.Operation, rt acl.ResourceType, name string) {
	e.t.Helper()
	if err := e.acls.Add(acl.Binding{ResourceType: rt, Name: name, Pattern: acl.Literal, Principal: principal, Host: "*", Operation: op, Permission: acl.Allow}); err != nil {
		e.t.Fatal(err)
	}
}

// Each endpoint asks what its Kafka API asks: bob (with every right on
// another topic and group) is refused 403 naming the operation, and
// nothing changes; alice, given exactly those rights, succeeds.
func TestAuthz_Endpoints(t *testing.T) {
	e := newAuthEnv(t, true, nil)
	fill(t, e.createTopic("orders", 1), 0, 3)
	e.createTopic("payments", 1)
	if err := e.db.Offsets().Commit(context.Background(), offsets.Key{Consumer: "billing", Topic: "orders", Partition: 0}, 1); err != nil {
		t.Fatal(err)
	}
	for _, rt := range []acl.ResourceType{acl.Topic, acl.Group} {
		e.grant("User:bob", acl.All, rt, "other")
	}
	alice, bob := basic("alice", "alice-pw"), basic("bob", "bob-pw")
	type perm struct {
		op   acl.Operation
		rt   acl.ResourceType
		name string
	}
	for _, c := range []struct {
		name   string
		rq     request
		needs  []perm
		status int
	}{
		{"describe topic", request{method: "GET", path: "/api/topics/orders"}, []perm{{acl.Describe, acl.Topic, "orders"}}, 200},
		{"describe a topic that does not exist", request{method: "GET", path: "/api/topics/nope"}, []perm{{acl.Describe, acl.Topic, "nope"}}, 404},
		{"describe partition", request{method: "GET", path: "/api/topics/orders/partitions/0"}, []perm{{acl.Describe, acl.Topic, "orders"}}, 200},
		{"append", request{method: "POST", path: "/api/topics/orders/records", ctype: "application/json", body: `{"records":[{"value":"x"}]}`}, []perm{{acl.Write, acl.Topic, "orders"}}, 200},
		{"append to a partition", request{method: "POST", path: "/api/topics/orders/partitions/0/records", ctype: "application/octet-stream", body: "y"}, []perm{{acl.Write, acl.Topic, "orders"}}, 200},
		{"read", request{method: "GET", path: "/api/topics/orders/partitions/0/records"}, []perm{{acl.Read, acl.Topic, "orders"}}, 200},
		{"consumer lag", request{method: "GET", path: "/api/consumers/billing/topics/orders"}, []perm{{acl.Describe, acl.Group, "billing"}, {acl.Describe, acl.Topic, "orders"}}, 200},
		{"describe consumer", request{method: "GET", path: "/api/consumers/billing"}, []perm{{acl.Describe, acl.Group, "billing"}, {acl.Describe, acl.Topic, "orders"}}, 200},
		{"commit", request{method: "POST", path: "/api/consumers/billing/topics/orders/commit", ctype: "application/json", body: `{"offsets":[{"partition":0,"offset":2}]}`},
			[]perm{{acl.Read, acl.Group, "billing"}, {acl.Read, acl.Topic, "orders"}}, 200},
		{"reset", request{method: "POST", path: "/api/consumers/billing/topics/orders/reset", ctype: "application/json", body: `{"to":"earliest"}`},
			[]perm{{acl.Read, acl.Group, "billing"}, {acl.Read, acl.Topic, "orders"}}, 200},
		{"topic history", request{method: "GET", path: "/api/history?topic=orders"}, []perm{{acl.Describe, acl.Topic, "orders"}}, 200},
		{"consumer history", request{method: "GET", path: "/api/history?consumer=billing"}, []perm{{acl.Describe, acl.Group, "billing"}}, 200},
		{"create topic (CREATE on the topic)", request{method: "POST", path: "/api/topics", ctype: "application/json", body: `{"name":"made"}`}, []perm{{acl.Create, acl.Topic, "made"}}, 201},
		{"create topic (CREATE on the cluster)", request{method: "POST", path: "/api/topics", ctype: "application/json", body: `{"name":"made2"}`}, []perm{{acl.Create, acl.Cluster, acl.ClusterName}}, 201},
		{"delete topic", request{method: "DELETE", path: "/api/topics/payments"}, []perm{{acl.Delete, acl.Topic, "payments"}}, 204},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := &authEnv{env: e.with(t), acls: e.acls}
			before := e.dbState()
			rq := c.rq
			rq.header = bob
			r := e.send(rq)
			e.want(r, 403, CodeForbidden)
			var body struct {
				Error struct {
					Message string
					Details map[string]string
				}
			}
			r.decode(t, &body)
			// CREATE: the topic is named (the cluster was tried first), as
			// Kafka answers TOPIC_AUTHORIZATION_FAILED.
			if d := body.Error.Details; d["principal"] != "User:bob" || d["operation"] != c.needs[0].op.String() ||
				d["resource_type"] != c.needs[0].rt.String() && !(c.needs[0].op == acl.Create && d["resource_type"] == "TOPIC") {
				t.Errorf("the denial: %+v", body.Error)
			}
			if after := e.dbState(); after != before {
				t.Errorf("a denied request changed the state:\n%s\nwas:\n%s", after, before)
			}
			for _, p := range c.needs {
				e.grant("User:alice", p.op, p.rt, p.name)
			}
			rq.header = alice
			if r := e.send(rq); r.status != c.status {
				t.Fatalf("alice with %v: %d, want %d\n%s", c.needs, r.status, c.status, r.body)
			}
		})
	}
	// A group without its topic, and a topic without its group.
	e.grant("User:bob", acl.Read, acl.Group, "billing")
	commit := request{method: "POST", path: "/api/consumers/billing/topics/orders/commit", ctype: "application/json", body: `{"offsets":[{"partition":0,"offset":1}]}`, header: bob}
	e.want(e.send(commit), 403, CodeForbidden)
	e.grant("User:bob", acl.Read, acl.Topic, "orders")
	e.want(e.send(commit), 200, "")

	// The stream: READ on the topic.
	e.want(e.send(request{method: "GET", path: "/api/topics/payments/partitions/0/stream", header: alice}), 403, CodeForbidden)
	e.grant("User:alice", acl.Read, acl.Topic, "made")
	sse := e.openSSE("/api/topics/made/partitions/0/stream", alice)
	sse.close()

	// The super user may do anything; anonymous nothing.
	e.want(e.send(request{method: "GET", path: "/api/topics/made2", header: basic("admin", "admin-pw")}), 200, "")
	if m := string(e.get("/metrics").body); !strings.Contains(m, `passbook_http_authorization_denied_total{operation="DESCRIBE",resource_type="TOPIC"}`) {
		t.Error("/metrics lacks the denials")
	}
}

// Lists show only what the principal may DESCRIBE: topics, consumers
// (DESCRIBE on the group and on the topic), the dashboard's events and
// the history. Deny wins over allow; prefixed patterns match.
func TestAuthz_ListsFiltered(t *testing.T) {
	e := newAuthEnv(t, true, nil)
	for _, n := range []string{"orders", "payments", "payroll", "secret"} {
		fill(t, e.createTopic(n, 1), 0, 2)
	}
	ctx := context.Background()
	for _, k := range []offsets.Key{{Consumer: "billing", Topic: "orders"}, {Consumer: "billing", Topic: "secret"}, {Consumer: "audit", Topic: "orders"}} {
		if err := e.db.Offsets().Commit(ctx, k, 1); err != nil {
			t.Fatal(err)
		}
	}
	add := func(b acl.Binding) {
		b.Principal, b.Host = "User:alice", "*"
		if err := e.acls.Add(b); err != nil {
			t.Fatal(err)
		}
	}
	add(acl.Binding{ResourceType: acl.Topic, Name: "orders", Pattern: acl.Literal, Operation: acl.Read, Permission: acl.Allow})
	add(acl.Binding{ResourceType: acl.Topic, Name: "pay", Pattern: acl.Prefixed, Operation: acl.Describe, Permission: acl.Allow})
	add(acl.Binding{ResourceType: acl.Topic, Name: "payroll", Pattern: acl.Literal, Operation: acl.Describe, Permission: acl.Deny})
	add(acl.Binding{ResourceType: acl.Group, Name: "billing", Pattern: acl.Literal, Operation: acl.Describe, Permission: acl.Allow})
	alice := basic("alice", "alice-pw")

	var tl struct{ Topics []struct{ Name string } }
	e.send(request{method: "GET", path: "/api/topics", header: alice}).decode(t, &tl)
	var names []string
	for _, x := range tl.Topics {
		names = append(names, x.Name)
	}
	if !slices.Equal(names, []string{"orders", "payments"}) {
		t.Errorf("topics listed: %v, want orders, payments", names)
	}

	var cl struct{ Consumers []consumerInfo }
	e.send(request{method: "GET", path: "/api/consumers", header: alice}).decode(t, &cl)
	if len(cl.Consumers) != 1 || cl.Consumers[0].Name != "billing" || len(cl.Consumers[0].Topics) != 1 || cl.Consumers[0].Topics[0].Topic != "orders" {
		t.Errorf("consumers listed: %+v, want billing on orders only", cl.Consumers)
	}
	var ci consumerInfo
	e.send(request{method: "GET", path: "/api/consumers/billing", header: alice}).decode(t, &ci)
	if len(ci.Topics) != 1 || ci.Topics[0].Topic != "orders" {
		t.Errorf("billing described: %+v, want orders only", ci)
	}
	e.want(e.send(request{method: "GET", path: "/api/consumers/audit", header: alice}), 403, CodeForbidden)

	// The dashboard's stream.
	sse := e.openSSE("/api/events", alice)
	ev := sse.next(t, 10*time.Second)
	var u update
	if err := json.Unmarshal([]byte(ev.data), &u); err != nil || ev.name != "snapshot" {
		t.Fatalf("first event %q: %v", ev.name, err)
	}
	names = nil
	for _, x := range u.Topics {
		names = append(names, x.Name)
	}
	slices.Sort(names)
	var groups []string
	for _, g := range u.Groups {
		groups = append(groups, g.Consumer+"/"+g.Topic)
	}
	if !slices.Equal(names, []string{"orders", "payments"}) || !slices.Equal(groups, []string{"billing/orders"}) {
		t.Errorf("snapshot shows topics %v and groups %v, want [orders payments] and [billing/orders]", names, groups)
	}
	// Updates too: an append to secret is not sent; one to orders is.
	fill(t, mustTopic(t, e.env, "secret"), 0, 1)
	fill(t, mustTopic(t, e.env, "orders"), 0, 1)
	for {
		ev := sse.next(t, 10*time.Second)
		var u update
		json.Unmarshal([]byte(ev.data), &u)
		if strings.Contains(ev.data, "secret") || strings.Contains(ev.data, "payroll") {
			t.Fatalf("an update shows a hidden topic: %s", ev.data)
		}
		if len(u.Topics) > 0 && u.Topics[0].Name == "orders" {
			break
		}
	}
	sse.close()

	var h struct{ Lag map[string]any }
	e.send(request{method: "GET", path: "/api/history?consumer=billing", header: alice}).decode(t, &h)
	if _, ok := h.Lag["secret"]; ok {
		t.Errorf("the history shows billing's lag on secret: %v", h.Lag)
	}
	e.want(e.send(request{method: "GET", path: "/api/history?topic=secret", header: alice}), 403, CodeForbidden)
}

func mustTopic(t *testing.T, e *env, name string) *passbook.Topic {
	t.Helper()
	tp, err := e.db.Topic(name)
	if err != nil {
		t.Fatal(err)
	}
	return tp
}

// Without RequireAuth but with ACLs, a request without credentials is
// User:ANONYMOUS, and wrong credentials are still refused.
func TestAuthz_Anonymous(t *testing.T) {
	e := newAuthEnv(t, true, &Options{RequireAuth: false}, optional)
	e.createTopic("orders", 1)
	e.want(e.get("/api/topics/orders"), 403, CodeForbidden)
	e.want(e.send(request{method: "GET", path: "/api/topics/orders", header: basic("alice", "wrong")}), 401, CodeUnauthorized)
	e.grant(auth.Anonymous, acl.Describe, acl.Topic, "orders")
	e.want(e.get("/api/topics/orders"), 200, "")
}

// Two dashboards of two principals, on one hub: each sees only its own.
func TestAuthz_EventsPerPrincipal(t *testing.T) {
	e := newAuthEnv(t, true, nil)
	orders, secret := e.createTopic("orders", 1), e.createTopic("secret", 1)
	e.grant("User:alice", acl.Describe, acl.Topic, "orders")
	e.grant("User:bob", acl.Describe, acl.Topic, "secret")
	streams := map[string]*sseClient{
		"orders": e.openSSE("/api/events", basic("alice", "alice-pw")),
		"secret": e.openSSE("/api/events", basic("bob", "bob-pw")),
	}
	for range 3 {
		fill(t, orders, 0, 1)
		fill(t, secret, 0, 1)
		for own, sse := range streams {
			other := map[string]string{"orders": "secret", "secret": "orders"}[own]
			for {
				ev := sse.next(t, 10*time.Second)
				if strings.Contains(ev.data, `"`+other+`"`) {
					t.Fatalf("the %s stream shows %s: %s", own, other, ev.data)
				}
				if strings.Contains(ev.data, `"name":"`+own+`"`) {
					break
				}
			}
		}
	}
}
