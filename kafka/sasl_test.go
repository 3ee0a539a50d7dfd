package kafka

import (
	"context"
	"crypto/sha512"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/passbook-log/passbook/auth"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	xdgscram "github.com/xdg-go/scram"
)

// produceConsume produces n records to topic with cl and reads them back
// with a second client made by newClient.
func produceConsume(t *testing.T, cl *kgo.Client, consumer func(...kgo.Opt) *kgo.Client, topic string, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range n {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: value(i)}).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}
	c := consumer(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := 0
	for got < n {
		fs := c.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatalf("consume after %d records: %v", got, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if string(r.Value) != string(value(got)) {
				t.Fatalf("record %d is %q", got, r.Value)
			}
			got++
		})
	}
}

func TestSASL_Franz_SCRAM(t *testing.T) {
	for _, tc := range []struct {
		mechanism string
		sasl      func(scram.Auth) sasl.Mechanism
	}{
		{auth.SCRAMSHA256, scram.Auth.AsSha256Mechanism},
		{auth.SCRAMSHA512, scram.Auth.AsSha512Mechanism},
	} {
		t.Run(tc.mechanism, func(t *testing.T) {
			ts := startServer(t, &Options{SASLMechanisms: []string{tc.mechanism}, Users: openUsers(t)})
			ts.createTopic(t, "scram", 1)
			m := tc.sasl(scram.Auth{User: "alice", Pass: testUsers["alice"]})
			cl := ts.client(t, kgo.SASL(m))
			produceConsume(t, cl, func(o ...kgo.Opt) *kgo.Client { return ts.client(t, append(o, kgo.SASL(m))...) }, "scram", 20)
			if n := metricValue(t, ts.srv, "passbook_kafka_authentications_total", "mechanism", tc.mechanism, "result", "success"); n < 2 {
				t.Errorf("successful %s authentications: %v, want 2 or more (a producer and a consumer)", tc.mechanism, n)
			}
		})
	}
}

func TestSASL_Franz_PLAIN_OverTLS(t *testing.T) {
	set := certs(t, "unused")
	ts := startServer(t, &Options{TLS: set.ServerConfig(false), SASLMechanisms: []string{auth.PLAIN}, Users: openUsers(t)})
	ts.createTopic(t, "plain", 1)
	opts := []kgo.Opt{kgo.DialTLSConfig(set.ClientConfig(false)), kgo.SASL(plain.Auth{User: "bob", Pass: testUsers["bob"]}.AsMechanism())}
	cl := ts.client(t, opts...)
	produceConsume(t, cl, func(o ...kgo.Opt) *kgo.Client { return ts.client(t, append(o, opts...)...) }, "plain", 20)
}

func TestSASL_PLAINWithoutTLS_RefusedUnlessInsecure(t *testing.T) {
	users := openUsers(t)
	o := Options{SASLMechanisms: []string{"plain"}, Users: users}
	err := o.Validate()
	if err == nil || !strings.Contains(err.Error(), "PLAIN sends passwords in the clear: use TLS (--tls-cert/--tls-key) or --insecure") {
		t.Fatalf("Validate: %v", err)
	}
	o.Insecure = true
	if err := o.Validate(); err != nil {
		t.Fatalf("Validate with Insecure: %v", err)
	}
}

func TestOptions_Validate_Security(t *testing.T) {
	users := openUsers(t)
	for _, tc := range []struct {
		name string
		o    Options
		want string // "" = valid
	}{
		{"SCRAM", Options{SASLMechanisms: []string{auth.SCRAMSHA256, "scram-sha-512"}, Users: users}, ""},
		{"unknown mechanism", Options{SASLMechanisms: []string{"GSSAPI"}, Users: users}, `SASL mechanism "GSSAPI": want PLAIN, SCRAM-SHA-256, SCRAM-SHA-512`},
		{"SASL without users", Options{SASLMechanisms: []string{auth.SCRAMSHA512}}, "SASL needs a user store"},
		{"negative reauth", Options{ConnectionsMaxReauth: -time.Second}, "connections.max.reauth -1s is negative"},
		{"PLAIN without TLS", Options{SASLMechanisms: []string{auth.PLAIN}, Users: users}, "PLAIN sends passwords in the clear"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.o.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Validate: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Validate: %v, want an error with %q", err, tc.want)
			}
			if tc.want != "" {
				if _, err := NewServer(nil, &tc.o); err == nil {
					t.Fatal("NewServer accepted the options")
				}
			}
		})
	}
}

// xdgClient is sarama's SCRAMClient over github.com/xdg-go/scram, as
// sarama's own example has it.
type xdgClient struct {
	*xdgscram.Client
	*xdgscram.ClientConversation
	xdgscram.HashGeneratorFcn
}

func (x *xdgClient) Begin(user, pass, authzID string) error {
	var err error
	x.Client, err = x.HashGeneratorFcn.NewClient(user, pass, authzID)
	if err != nil {
		return err
	}
	x.ClientConversation = x.Client.NewConversation()
	return nil
}

func (x *xdgClient) Step(challenge string) (string, error) {
	return x.ClientConversation.Step(challenge)
}
func (x *xdgClient) Done() bool { return x.ClientConversation.Done() }

func TestSASL_Sarama_SCRAMSHA512_OverTLS(t *testing.T) {
	set := certs(t, "unused")
	ts := startServer(t, &Options{TLS: set.ServerConfig(false), SASLMechanisms: []string{auth.SCRAMSHA512}, Users: openUsers(t)})
	ts.createTopic(t, "sarama-scram", 1)
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V3_9_0_0
	cfg.Net.TLS.Enable, cfg.Net.TLS.Config = true, set.ClientConfig(false)
	cfg.Net.SASL.Enable = true
	cfg.Net.SASL.Mechanism = sarama.SASLTypeSCRAMSHA512
	cfg.Net.SASL.User, cfg.Net.SASL.Password = "alice", testUsers["alice"]
	cfg.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &xdgClient{HashGeneratorFcn: sha512.New} }
	cfg.Producer.Return.Successes = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	prod, err := sarama.NewSyncProducer([]string{ts.addr}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	for i := range 10 {
		if _, off, err := prod.SendMessage(&sarama.ProducerMessage{Topic: "sarama-scram", Value: sarama.ByteEncoder(value(i))}); err != nil || off != int64(i) {
			t.Fatalf("message %d: offset %d, %v", i, off, err)
		}
	}
	if got := ts.head(t, "sarama-scram"); got != 10 {
		t.Fatalf("head %d, want 10", got)
	}

	// A wrong password: sarama reports Kafka's error.
	cfg.Net.SASL.Password = "wrong"
	_, err = sarama.NewSyncProducer([]string{ts.addr}, cfg)
	if !errors.Is(err, sarama.ErrSASLAuthenticationFailed) {
		t.Fatalf("wrong password: %v, want %v", err, sarama.ErrSASLAuthenticationFailed)
	}
}

func TestSASL_Sarama_HandshakeV0_PLAIN(t *testing.T) {
	ts := startServer(t, saslOptions(t))
	ts.createTopic(t, "v0", 1)
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V2_8_0_0
	cfg.Net.SASL.Enable = true
	cfg.Net.SASL.Mechanism = sarama.SASLTypePlaintext
	cfg.Net.SASL.Version = sarama.SASLHandshakeV0
	cfg.ApiVersionsRequest = false // sarama requires it with v0: old clients start with the handshake
	cfg.Net.SASL.User, cfg.Net.SASL.Password = "bob", testUsers["bob"]
	cfg.Producer.Return.Successes = true
	prod, err := sarama.NewSyncProducer([]string{ts.addr}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	if _, off, err := prod.SendMessage(&sarama.ProducerMessage{Topic: "v0", Value: sarama.StringEncoder("raw tokens")}); err != nil || off != 0 {
		t.Fatalf("offset %d, %v", off, err)
	}
}

// scramExchange runs a SCRAM-SHA-256 exchange for user with password
// over SaslAuthenticate v2 and returns the last response.
func scramExchange(t *testing.T, r *rawConn, user, pass string) *kmsg.SASLAuthenticateResponse {
	t.Helper()
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, auth.SCRAMSHA256
	if resp := r.do(hs).(*kmsg.SASLHandshakeResponse); resp.ErrorCode != 0 {
		t.Fatalf("SaslHandshake: error %d", resp.ErrorCode)
	}
	client, err := xdgscram.SHA256.NewClient(user, pass, "")
	if err != nil {
		t.Fatal(err)
	}
	conv := client.NewConversation()
	msg, err := conv.Step("")
	if err != nil {
		t.Fatal(err)
	}
	for {
		a := kmsg.NewPtrSASLAuthenticateRequest()
		a.Version, a.SASLAuthBytes = 2, []byte(msg)
		resp := r.do(a).(*kmsg.SASLAuthenticateResponse)
		if resp.ErrorCode != 0 || conv.Done() {
			return resp
		}
		if msg, err = conv.Step(string(resp.SASLAuthBytes)); err != nil {
			t.Fatalf("client step: %v", err)
		}
		if conv.Done() {
			return resp
		}
	}
}

// The same answer, with Kafka's words, whether the user exists or not,
// and the connection closed after it.
func TestSASL_WrongPasswordAndUnknownUser_SameError(t *testing.T) {
	ts := startServer(t, saslOptions(t))
	const want = "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256"
	for _, tc := range []struct{ name, user, pass string }{
		{"wrong password", "alice", "not-alice-secret"},
		{"unknown user", "mallory", "alice-secret"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := dialRaw(t, ts.addr)
			resp := scramExchange(t, r, tc.user, tc.pass)
			if resp.ErrorCode != kerr.SaslAuthenticationFailed.Code || resp.ErrorMessage == nil || *resp.ErrorMessage != want {
				t.Fatalf("error %d %v, want SASL_AUTHENTICATION_FAILED %q", resp.ErrorCode, resp.ErrorMessage, want)
			}
			if !r.closedByServer() {
				t.Fatal("connection still open after a failed authentication")
			}
		})
	}
	t.Run("franz-go", func(t *testing.T) {
		for _, user := range []string{"alice", "mallory"} {
			cl := ts.client(t, kgo.SASL(scram.Auth{User: user, Pass: "wrong"}.AsSha512Mechanism()), kgo.RequestRetries(0))
			err := cl.Ping(context.Background())
			if !errors.Is(err, kerr.SaslAuthenticationFailed) || !strings.Contains(err.Error(), "SCRAM-SHA-512") {
				t.Errorf("%s: %v, want SASL_AUTHENTICATION_FAILED", user, err)
			}
		}
	})
	if n := metricValue(t, ts.srv, "passbook_kafka_authentications_total", "mechanism", auth.SCRAMSHA256, "result", "failure"); n != 2 {
		t.Errorf("failed SCRAM-SHA-256 authentications: %v, want 2", n)
	}
}

func TestSASL_RequestBeforeAuthentication_ClosesConnection(t *testing.T) {
	ts := startServer(t, saslOptions(t))
	for _, req := range []kmsg.Request{kmsg.NewPtrMetadataRequest(), kmsg.NewPtrSASLAuthenticateRequest(), kmsg.NewPtrCreateTopicsRequest()} {
		t.Run(kmsg.NameForKey(req.Key()), func(t *testing.T) {
			r := dialRaw(t, ts.addr)
			r.do(kmsg.NewPtrApiVersionsRequest()) // allowed first
			if _, err := r.tryDo(req); err == nil {
				t.Fatal("answered before authentication")
			}
			if !r.closedByServer() {
				t.Fatal("connection open")
			}
		})
	}
	if len(ts.db.Topics()) != 0 {
		t.Fatal("a topic was created")
	}
}

func TestSASL_UnsupportedMechanism(t *testing.T) {
	ts := startServer(t, &Options{SASLMechanisms: []string{auth.SCRAMSHA512}, Users: openUsers(t)})
	r := dialRaw(t, ts.addr)
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, "GSSAPI"
	resp := r.do(hs).(*kmsg.SASLHandshakeResponse)
	if resp.ErrorCode != kerr.UnsupportedSaslMechanism.Code || len(resp.SupportedMechanisms) != 1 || resp.SupportedMechanisms[0] != auth.SCRAMSHA512 {
		t.Fatalf("error %d, mechanisms %v", resp.ErrorCode, resp.SupportedMechanisms)
	}
	if !r.closedByServer() {
		t.Fatal("connection open")
	}
}

func TestSASL_HandshakeV0_RawTokens(t *testing.T) {
	ts := startServer(t, saslOptions(t))
	t.Run("PLAIN", func(t *testing.T) {
		r := dialRaw(t, ts.addr)
		hs := kmsg.NewPtrSASLHandshakeRequest()
		hs.Mechanism = auth.PLAIN
		if resp := r.do(hs).(*kmsg.SASLHandshakeResponse); resp.ErrorCode != 0 {
			t.Fatalf("error %d", resp.ErrorCode)
		}
		out, err := r.token(plainMessage("alice", testUsers["alice"]))
		if err != nil || len(out) != 0 {
			t.Fatalf("token answer %q, %v; want an empty token", out, err)
		}
		if resp := r.do(kmsg.NewPtrMetadataRequest()).(*kmsg.MetadataResponse); len(resp.Brokers) != 1 {
			t.Fatalf("metadata after authentication: %+v", resp)
		}
	})
	t.Run("SCRAM-SHA-256", func(t *testing.T) {
		r := dialRaw(t, ts.addr)
		hs := kmsg.NewPtrSASLHandshakeRequest()
		hs.Mechanism = auth.SCRAMSHA256
		if resp := r.do(hs).(*kmsg.SASLHandshakeResponse); resp.ErrorCode != 0 {
			t.Fatalf("error %d", resp.ErrorCode)
		}
		client, _ := xdgscram.SHA256.NewClient("bob", testUsers["bob"], "")
		conv := client.NewConversation()
		msg, _ := conv.Step("")
		for !conv.Done() {
			out, err := r.token([]byte(msg))
			if err != nil {
				t.Fatal(err)
			}
			if msg, err = conv.Step(string(out)); err != nil {
				t.Fatal(err)
			}
		}
		if resp := r.do(kmsg.NewPtrMetadataRequest()).(*kmsg.MetadataResponse); len(resp.Brokers) != 1 {
			t.Fatalf("metadata after authentication: %+v", resp)
		}
	})
	t.Run("wrong password closes unanswered", func(t *testing.T) {
		r := dialRaw(t, ts.addr)
		hs := kmsg.NewPtrSASLHandshakeRequest()
		hs.Mechanism = auth.PLAIN
		r.do(hs)
		if out, err := r.token(plainMessage("alice", "wrong")); err == nil {
			t.Fatalf("answered %q", out)
		}
	})
}

// A client that does not re-authenticate is closed at its first request
// after its session ends; SaslAuthenticate v1+ tells it the lifetime.
func TestSASL_ExpiredSession_ClosesConnection(t *testing.T) {
	const lifetime = 2 * time.Second
	o := saslOptions(t)
	o.ConnectionsMaxReauth = lifetime
	ts := startServer(t, o)
	conns := map[int16]*rawConn{}
	for _, version := range []int16{0, 2} {
		r := dialRaw(t, ts.addr)
		resp := r.authenticatePlain(version, "alice", testUsers["alice"])
		if resp.ErrorCode != 0 {
			t.Fatalf("v%d: error %d", version, resp.ErrorCode)
		}
		if want := map[int16]int64{0: 0, 2: lifetime.Milliseconds()}[version]; resp.SessionLifetimeMillis != want {
			t.Fatalf("v%d: session lifetime %d ms, want %d", version, resp.SessionLifetimeMillis, want)
		}
		r.do(kmsg.NewPtrMetadataRequest()) // within the session
		conns[version] = r
	}
	time.Sleep(lifetime + 100*time.Millisecond)
	for version, r := range conns {
		if _, err := r.tryDo(kmsg.NewPtrMetadataRequest()); err == nil {
			t.Fatalf("v%d: answered after the session ended", version)
		}
	}
	if n := metricValue(t, ts.srv, "passbook_kafka_sessions_expired_total"); n != 2 {
		t.Errorf("sessions expired: %v, want 2", n)
	}
}

// franz-go re-authenticates before its session ends (KIP-368) and keeps
// producing over several lifetimes.
func TestSASL_Franz_Reauthenticates(t *testing.T) {
	const lifetime = 1500 * time.Millisecond
	o := saslOptions(t)
	o.ConnectionsMaxReauth = lifetime
	ts := startServer(t, o)
	ts.createTopic(t, "reauth", 1)
	cl := ts.client(t, kgo.SASL(scram.Auth{User: "alice", Pass: testUsers["alice"]}.AsSha256Mechanism()))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	n := 0
	for time.Since(start) < 3*lifetime {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "reauth", Value: value(n)}).FirstErr(); err != nil {
			t.Fatalf("produce %d after %v: %v", n, time.Since(start), err)
		}
		n++
		time.Sleep(50 * time.Millisecond)
	}
	// It renewed its sessions in place. (On a machine stalled past
	// franz-go's one-second margin, a connection may also be closed at
	// its session's end and made again, which the producer survives.)
	if got := metricValue(t, ts.srv, "passbook_kafka_reauthentications_total", "result", "success"); got < 1 {
		t.Errorf("re-authentications: %v, want at least one", got)
	}
	if head := ts.head(t, "reauth"); head != int64(n) {
		t.Fatalf("head %d, want %d", head, n)
	}
}

func TestSASL_ReauthenticationAsAnotherUser_Fails(t *testing.T) {
	o := saslOptions(t)
	o.ConnectionsMaxReauth = time.Hour
	ts := startServer(t, o)
	r := dialRaw(t, ts.addr)
	if resp := r.authenticatePlain(2, "alice", testUsers["alice"]); resp.ErrorCode != 0 {
		t.Fatalf("error %d", resp.ErrorCode)
	}
	resp := r.authenticatePlain(2, "bob", testUsers["bob"])
	const want = "Cannot change principals during re-authentication from User.alice: User.bob"
	if resp.ErrorCode != kerr.SaslAuthenticationFailed.Code || resp.ErrorMessage == nil || *resp.ErrorMessage != want {
		t.Fatalf("error %d %v, want %q", resp.ErrorCode, resp.ErrorMessage, want)
	}
	if !r.closedByServer() {
		t.Fatal("connection open")
	}

	// The same user again is a re-authentication.
	r = dialRaw(t, ts.addr)
	r.authenticatePlain(2, "alice", testUsers["alice"])
	if resp := r.authenticatePlain(2, "alice", testUsers["alice"]); resp.ErrorCode != 0 || resp.SessionLifetimeMillis != time.Hour.Milliseconds() {
		t.Fatalf("re-authentication: error %d, lifetime %d", resp.ErrorCode, resp.SessionLifetimeMillis)
	}
	if got := metricValue(t, ts.srv, "passbook_kafka_reauthentications_total", "result", "failure"); got != 1 {
		t.Errorf("failed re-authentications: %v, want 1", got)
	}
}

// Without SASL the SASL APIs answer ILLEGAL_SASL_STATE, as a Kafka
// PLAINTEXT listener does, and the connection stays usable.
func TestSASL_Off_IllegalSaslState(t *testing.T) {
	ts := startServer(t, nil)
	r := dialRaw(t, ts.addr)
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, auth.PLAIN
	if resp := r.do(hs).(*kmsg.SASLHandshakeResponse); resp.ErrorCode != kerr.IllegalSaslState.Code {
		t.Fatalf("SaslHandshake: error %d", resp.ErrorCode)
	}
	if resp := r.do(kmsg.NewPtrSASLAuthenticateRequest()).(*kmsg.SASLAuthenticateResponse); resp.ErrorCode != kerr.IllegalSaslState.Code {
		t.Fatalf("SaslAuthenticate: error %d", resp.ErrorCode)
	}
	r.do(kmsg.NewPtrMetadataRequest())
}

func TestTLS_Franz(t *testing.T) {
	set := certs(t, "unused")
	ts := startServer(t, &Options{TLS: set.ServerConfig(false)})
	ts.createTopic(t, "tls", 1)
	opt := kgo.DialTLSConfig(set.ClientConfig(false))
	produceConsume(t, ts.client(t, opt), func(o ...kgo.Opt) *kgo.Client { return ts.client(t, append(o, opt)...) }, "tls", 20)

	// A plaintext client fails its handshake: counted, not served.
	r := dialRaw(t, ts.addr)
	if _, err := r.tryDo(kmsg.NewPtrApiVersionsRequest()); err == nil {
		t.Fatal("a plaintext request was answered on a TLS port")
	}
	for metricValue(t, ts.srv, "passbook_kafka_tls_handshake_failures_total") < 1 {
		time.Sleep(10 * time.Millisecond) // the server counts after it gives up on the handshake
	}
}

// A connection that never finishes its TLS handshake is closed at the
// request timeout, and counted; it held a place among the connections
// meanwhile, as any connection does.
func TestTLS_HandshakeTimeout(t *testing.T) {
	set := certs(t, "unused")
	ts := startServer(t, &Options{TLS: set.ServerConfig(false), RequestTimeout: 300 * time.Millisecond})
	r := dialRaw(t, ts.addr)
	for ts.srv.Stats().Connections != 1 {
		time.Sleep(5 * time.Millisecond)
	}
	if !r.closedByServer() {
		t.Fatal("a connection without a handshake is still open")
	}
	for metricValue(t, ts.srv, "passbook_kafka_tls_handshake_failures_total") != 1 {
		time.Sleep(10 * time.Millisecond)
	}
	for ts.srv.Stats().Connections != 0 {
		time.Sleep(5 * time.Millisecond)
	}
}
