package kafka

import (
	"context"
	"encoding/binary"
	"io"
	"testing"
	"time"

	"github.com/passbook-log/passbook/acl"
	"github.com/passbook-log/passbook/auth"
	"github.com/passbook-log/passbook/internal/testcerts"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// The users every secured test server has, with their passwords.
var testUsers = map[string]string{"alice": "alice-secret", "bob": "bob-secret", "admin": "admin-secret"}

// openUsers is a user store in a temporary directory holding testUsers
// with both SCRAM mechanisms.
func openUsers(t testing.TB) *auth.Users {
	t.Helper()
	users, err := auth.OpenUsers(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for name, pw := range testUsers {
		for _, m := range auth.SCRAMMechanisms {
			if err := users.Set(name, m, []byte(pw), 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	return users
}

// authorizer is an Authorizer over an empty ACL store in a temporary
// directory, with User:admin a super user.
func authorizer(t testing.TB) *acl.Authorizer {
	t.Helper()
	store, err := acl.OpenStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return acl.NewAuthorizer(store, []string{auth.User("admin")}, nil)
}

// saslOptions serves every mechanism, PLAIN without TLS (Insecure), to
// testUsers.
func saslOptions(t testing.TB) *Options {
	return &Options{SASLMechanisms: []string{auth.PLAIN, auth.SCRAMSHA256, auth.SCRAMSHA512}, Users: openUsers(t), Insecure: true}
}

// plainClient is a franz-go client authenticating as user with PLAIN.
func (ts *testServer) plainClient(t testing.TB, user string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	return ts.client(t, append([]kgo.Opt{kgo.SASL(plain.Auth{User: user, Pass: testUsers[user]}.AsMechanism())}, opts...)...)
}

// seedRequest sends req straight to the server's one broker (no
// coordinator lookup, no retries) and returns its response.
func seedRequest[R kmsg.Response](t testing.TB, cl *kgo.Client, req kmsg.Request) R {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := cl.SeedBrokers()[0].Request(ctx, req)
	if err != nil {
		t.Fatalf("%s: %v", kmsg.NameForKey(req.Key()), err)
	}
	return resp.(R)
}

// metricValue is the value of the server's metric name with the given
// label values (name=value pairs), or -1 if it is not reported.
func metricValue(t testing.TB, srv *Server, name string, labels ...string) float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(srv.Collector())
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	next:
		for _, m := range f.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				if labelValue(m, labels[i]) != labels[i+1] {
					continue next
				}
			}
			if m.GetCounter() != nil {
				return m.GetCounter().GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	return -1
}

func labelValue(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// certs makes a CA, a server certificate and a client certificate with
// common name cn.
func certs(t testing.TB, cn string) *testcerts.Set {
	t.Helper()
	return testcerts.Write(t, t.TempDir(), cn)
}

// token writes a raw size-prefixed SASL token (after SaslHandshake v0)
// and reads the server's, or returns the read error.
func (r *rawConn) token(tok []byte) ([]byte, error) {
	r.t.Helper()
	r.write(binary.BigEndian.AppendUint32(nil, uint32(len(tok))))
	r.write(tok)
	r.nc.SetReadDeadline(time.Now().Add(20 * time.Second))
	var size [4]byte
	if _, err := io.ReadFull(r.nc, size[:]); err != nil {
		return nil, err
	}
	b := make([]byte, binary.BigEndian.Uint32(size[:]))
	_, err := io.ReadFull(r.nc, b)
	return b, err
}

// tryDo sends req and reads its response, returning the read error (a
// closed connection) instead of failing the test.
func (r *rawConn) tryDo(req kmsg.Request) (kmsg.Response, error) {
	r.t.Helper()
	if _, err := r.nc.Write(r.frame(req)); err != nil {
		return nil, err
	}
	resp := req.ResponseKind()
	return resp, r.read(resp, req.Key() != int16(kmsg.ApiVersions) && req.IsFlexible())
}

// plainMessage is a SASL PLAIN message.
func plainMessage(user, pass string) []byte { return []byte("\x00" + user + "\x00" + pass) }

// authenticatePlain authenticates r with SaslHandshake v1 and
// SaslAuthenticate at version, and returns the last response.
func (r *rawConn) authenticatePlain(version int16, user, pass string) *kmsg.SASLAuthenticateResponse {
	r.t.Helper()
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, auth.PLAIN
	if resp := r.do(hs).(*kmsg.SASLHandshakeResponse); resp.ErrorCode != 0 {
		r.t.Fatalf("SaslHandshake: error %d", resp.ErrorCode)
	}
	a := kmsg.NewPtrSASLAuthenticateRequest()
	a.Version, a.SASLAuthBytes = version, plainMessage(user, pass)
	return r.do(a).(*kmsg.SASLAuthenticateResponse)
}

// head is the head of partition 0 of topic.
func (ts *testServer) head(t testing.TB, topic string) int64 {
	t.Helper()
	tp, err := ts.db.Topic(topic)
	if err != nil {
		t.Fatal(err)
	}
	l, err := tp.Partition(0)
	if err != nil {
		t.Fatal(err)
	}
	return l.Head()
}
