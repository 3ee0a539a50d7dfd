package main

// The Kafka port's security through the binary, as a user sets it up:
// `passbook user add` and `passbook acl add` on the data directory, then
// `passbook serve --tls-cert … --sasl … --authorize`, then real clients.

import (
	"context"
	"crypto/tls"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/passbook-log/passbook/internal/testcerts"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// cli runs the binary on dir and fails the test unless it exits 0.
func cli(t *testing.T, dir, stdin string, args ...string) string {
	t.Helper()
	out, errOut, code := runBinary(t, dir, stdin, append([]string{"--data", dir}, args...)...)
	if code != 0 {
		t.Fatalf("passbook %s: exit %d: %s", strings.Join(args, " "), code, errOut)
	}
	return out
}

// tlsMetric reads one sample of the server's /metrics over HTTPS (the
// HTTP listener is TLS too with --tls-cert).
func tlsMetric(t *testing.T, p *servedProc, cfg *tls.Config, name string) float64 {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}, Timeout: 10 * time.Second}
	return scrapeMetric(t, hc, "https://"+p.httpAddr, name)
}

// SASL_SSL end to end: users and ACLs made with the CLI before serve
// starts, franz-go with SCRAM-SHA-512 and PLAIN over TLS, an allowed
// producer and consumer group, a denied topic, Kafka's error for a wrong
// password, ACLs and users changed over Kafka (kadm) that the CLI then
// lists, sessions renewed (--connections-max-reauth) while producing,
// and the counts in /metrics.
func TestServeKafka_SASLSSL_ACLs(t *testing.T) {
	dir := t.TempDir()
	certs := testcerts.Write(t, t.TempDir(), "unused")
	cli(t, dir, "alice-secret\n", "user", "add", "alice", "--mechanism", "scram-sha-512", "--password-stdin")
	cli(t, dir, "admin-secret\n", "user", "add", "admin", "--password-stdin")
	cli(t, dir, "", "topic", "create", "orders")
	cli(t, dir, "", "topic", "create", "payroll")
	cli(t, dir, "", "acl", "add", "--allow", "User:alice", "--producer", "--topic", "orders")
	cli(t, dir, "", "acl", "add", "--allow", "User:alice", "--consumer", "--topic", "orders", "--group", "billing")
	const lifetime = 2 * time.Second
	p, _, _ := launchServe(t, dir, 20*time.Second, 15*time.Second,
		"--tls-cert", certs.CertFile, "--tls-key", certs.KeyFile,
		"--sasl", "scram-sha-512,scram-sha-256,plain", "--authorize", "--super-users", "User:admin",
		"--connections-max-reauth", lifetime.String())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := func(opts ...kgo.Opt) *kgo.Client {
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(p.kafkaAddr), kgo.DialTLSConfig(certs.ClientConfig(false))}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	alice := kgo.SASL(scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism())

	// alice produces to orders across three session lifetimes: franz-go
	// re-authenticates on its connections.
	prod := client(alice)
	start, n := time.Now(), 0
	for time.Since(start) < 3*lifetime {
		if err := prod.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("order " + strconv.Itoa(n))}).FirstErr(); err != nil {
			t.Fatalf("produce %d after %v: %v", n, time.Since(start), err)
		}
		n++
		time.Sleep(100 * time.Millisecond)
	}
	// ... but not to payroll.
	err := prod.ProduceSync(ctx, &kgo.Record{Topic: "payroll", Value: []byte("raise")}).FirstErr()
	if !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("produce to payroll: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}

	// Her consumer group reads what she wrote.
	cons := client(alice, kgo.ConsumeTopics("orders"), kgo.ConsumerGroup("billing"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := 0
	for got < n {
		fs := cons.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatalf("consume after %d: %v", got, err)
		}
		got += fs.NumRecords()
	}
	if err := cons.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("commit: %v", err)
	}

	// A wrong password, and an unknown user: the same Kafka error.
	for _, m := range []kgo.Opt{
		kgo.SASL(scram.Auth{User: "alice", Pass: "wrong"}.AsSha512Mechanism()),
		kgo.SASL(scram.Auth{User: "mallory", Pass: "wrong"}.AsSha512Mechanism()),
	} {
		if err := client(m, kgo.RequestRetries(0)).Ping(ctx); !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Fatalf("bad credentials: %v, want SASL_AUTHENTICATION_FAILED", err)
		}
	}

	// The super user (PLAIN over TLS) changes ACLs and users over Kafka;
	// the CLI sees both, in the same files.
	adm := kadm.NewClient(client(kgo.SASL(plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism())))
	if res, err := adm.CreateACLs(ctx, kadm.NewACLs().Topics("payroll").ResourcePatternType(kadm.ACLPatternLiteral).
		Allow("User:bob").AllowHosts("*").Operations(kadm.OpRead)); err != nil || res[0].Err != nil {
		t.Fatalf("CreateACLs: %+v, %v", res, err)
	}
	if list := cli(t, dir, "", "acl", "list"); !strings.Contains(list, "User:bob") || !strings.Contains(list, "payroll") {
		t.Fatalf("passbook acl list does not show bob's ACL:\n%s", list)
	}
	if res, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "carol", Mechanism: kadm.ScramSha256, Password: "carol-secret"}}); err != nil || res.Error() != nil {
		t.Fatalf("AlterUserSCRAMs: %+v, %v", res, err)
	}
	if list := cli(t, dir, "", "user", "list"); !strings.Contains(list, "carol") {
		t.Fatalf("passbook user list does not show carol:\n%s", list)
	}
	carol := client(kgo.SASL(scram.Auth{User: "carol", Pass: "carol-secret"}.AsSha256Mechanism()), kgo.RequestRetries(0))
	if err := carol.Ping(ctx); err != nil {
		t.Fatalf("carol, made over Kafka: %v", err)
	}

	cfg := certs.ClientConfig(false)
	for _, m := range []struct {
		name string
		min  float64
	}{
		{`passbook_kafka_authentications_total{mechanism="SCRAM-SHA-512",result="success"}`, 2},
		{`passbook_kafka_authentications_total{mechanism="SCRAM-SHA-512",result="failure"}`, 2},
		{`passbook_kafka_reauthentications_total{result="success"}`, 1},
		{`passbook_kafka_authorization_denied_total{api="Metadata"}`, 1}, // franz-go asks for payroll's metadata first
	} {
		if v := tlsMetric(t, p, cfg, m.name); v < m.min {
			t.Errorf("%s = %v, want at least %v", m.name, v, m.min)
		}
	}
}

// SSL with client certificates: the certificate's CN is the principal
// that `passbook acl add` names.
func TestServeKafka_MTLS_PrincipalFromCertificate(t *testing.T) {
	dir := t.TempDir()
	certs := testcerts.Write(t, t.TempDir(), "ingest")
	cli(t, dir, "", "topic", "create", "events")
	cli(t, dir, "", "topic", "create", "audit")
	cli(t, dir, "", "acl", "add", "--allow", "User:ingest", "--producer", "--topic", "events")
	p, _, _ := launchServe(t, dir, 20*time.Second, 15*time.Second,
		"--tls-cert", certs.CertFile, "--tls-key", certs.KeyFile, "--tls-client-ca", certs.CAFile, "--authorize")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.kafkaAddr), kgo.DialTLSConfig(certs.ClientConfig(true)))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "events", Value: []byte("e1")}).FirstErr(); err != nil {
		t.Fatalf("produce to events as User:ingest: %v", err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "audit", Value: []byte("a1")}).FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("produce to audit: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	topics, err := kadm.NewClient(cl).ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if names := topics.Names(); len(names) != 1 || names[0] != "events" {
		t.Fatalf("metadata lists %v, want only events", names)
	}
}
