package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/passbook-log/passbook/internal/testcerts"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

func TestUserCLI(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	run := func(stdin string, args ...string) (string, string, int) {
		return runBinary(t, dir, stdin, append([]string{"--data", data}, args...)...)
	}
	tests := []struct {
		stdin    string
		args     []string
		code     int
		out, err string // substrings of stdout, stderr
	}{
		{"s3cret\n", []string{"user", "add", "alice", "--password-stdin"}, 0, "user alice added: SCRAM-SHA-256 and SCRAM-SHA-512 (4,096 iterations)", ""},
		{"other\r\n", []string{"user", "add", "alice", "--password-stdin", "--mechanism", "scram-sha-512", "--iterations", "8192"}, 0, "user alice password changed: SCRAM-SHA-512 (8,192 iterations)", ""},
		{"pw\n", []string{"user", "add", "bob", "--password-stdin", "--mechanism", "SCRAM-SHA-256"}, 0, "user bob added: SCRAM-SHA-256", ""},
		{"pw\n", []string{"user", "add", "carol"}, 2, "", "--password-stdin"},
		{"\n", []string{"user", "add", "carol", "--password-stdin"}, 2, "", "no password"},
		{"pw\n", []string{"user", "add", "two words", "--password-stdin"}, 2, "", "no spaces"},
		{"pw\n", []string{"user", "add", "carol", "--password-stdin", "--mechanism", "plain"}, 2, "", "scram-sha-256 or scram-sha-512"},
		{"pw\n", []string{"user", "add", "carol", "--password-stdin", "--iterations", "1000"}, 2, "", "--iterations 1,000: want 4,096 to 16,384"},
		{"", []string{"user", "delete", "nobody"}, 1, "", `no such user "nobody"`},
		{"", []string{"user", "delete", "bob", "--mechanism", "scram-sha-512"}, 1, "", "no such user"},
		{"", []string{"user", "list"}, 0, "alice  SCRAM-SHA-256 (4,096 iterations), SCRAM-SHA-512 (8,192 iterations)", ""},
		{"", []string{"user", "delete", "bob"}, 0, "user bob deleted", ""},
	}
	for _, tt := range tests {
		out, errOut, code := run(tt.stdin, tt.args...)
		if code != tt.code || !strings.Contains(out, tt.out) || !strings.Contains(errOut, tt.err) {
			t.Errorf("passbook %s: exit %d, stdout %q, stderr %q; want exit %d, %q, %q", strings.Join(tt.args, " "), code, out, errOut, tt.code, tt.out, tt.err)
		}
	}
	out, _, code := run("", "user", "list", "--json")
	var users []struct {
		Name        string `json:"name"`
		Credentials []struct {
			Mechanism  string `json:"mechanism"`
			Iterations int    `json:"iterations"`
		} `json:"credentials"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &users) != nil || len(users) != 1 || users[0].Name != "alice" || len(users[0].Credentials) != 2 {
		t.Fatalf("user list --json: exit %d, %s", code, out)
	}
	stored, err := os.ReadFile(filepath.Join(data, "security", "users.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, pw := range []string{"s3cret", "other"} {
		if strings.Contains(string(stored), pw) {
			t.Errorf("users.json holds the password %q", pw)
		}
	}
}

func TestACLCLI(t *testing.T) {
	dir := t.TempDir()
	run := func(args ...string) (string, string, int) {
		return runBinary(t, dir, "", append([]string{"--data", "data"}, args...)...)
	}
	refused := [][]string{
		{"acl", "add", "--operation", "read", "--topic", "t"},                                        // no principal
		{"acl", "add", "--allow", "alice", "--operation", "read", "--topic", "t"},                    // not User:
		{"acl", "add", "--allow", "User:alice", "--topic", "t"},                                      // no operation
		{"acl", "add", "--allow", "User:alice", "--operation", "read"},                               // no resource
		{"acl", "add", "--allow", "User:alice", "--operation", "fly", "--topic", "t"},                // unknown operation
		{"acl", "add", "--allow", "User:alice", "--operation", "write", "--group", "g"},              // Write on a group
		{"acl", "add", "--allow", "User:alice", "--operation", "read", "--topic", "*", "--prefixed"}, // prefixed wildcard
		{"acl", "add", "--allow", "User:alice", "--operation", "read", "--topic", "t", "--host", "example.com"},
		{"acl", "add", "--allow", "User:alice", "--consumer", "--topic", "t"}, // --consumer needs a group
		{"acl", "delete"},
	}
	for _, args := range refused {
		if _, errOut, code := run(args...); code != 2 || !strings.HasPrefix(errOut, "error: ") {
			t.Errorf("passbook %s: exit %d, stderr %q; want exit 2 and an error", strings.Join(args, " "), code, errOut)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "data", "security", "acls.json")); err == nil {
		t.Fatal("refused acl commands wrote acls.json")
	}
	for _, args := range [][]string{
		{"acl", "add", "--allow", "User:alice", "--producer", "--topic", "orders"},
		{"acl", "add", "--allow", "User:bob", "--consumer", "--topic", "orders", "--group", "billing"},
		{"acl", "add", "--allow", "User:etl", "--operation", "read,describe", "--topic", "logs-", "--prefixed"},
		{"acl", "add", "--deny", "User:mallory", "--operation", "all", "--topic", "*", "--host", "10.0.0.9"},
	} {
		if _, errOut, code := run(args...); code != 0 {
			t.Fatalf("passbook %s: exit %d: %s", strings.Join(args, " "), code, errOut)
		}
	}
	out, _, _ := run("acl", "list", "--json")
	var acls []map[string]string
	if err := json.Unmarshal([]byte(out), &acls); err != nil || len(acls) != 9 {
		t.Fatalf("acl list --json: %d ACLs (%v), want 3 + 3 + 2 + 1:\n%s", len(acls), err, out)
	}
	out, _, _ = run("acl", "list", "--principal", "User:bob")
	if strings.Count(out, "User:bob") != 3 || strings.Contains(out, "alice") {
		t.Errorf("acl list --principal User:bob:\n%s", out)
	}
	out, _, _ = run("acl", "list", "--topic", "orders", "--operation", "write")
	if !strings.Contains(out, "User:alice  ALLOW       WRITE") || strings.Count(out, "\n") != 2 {
		t.Errorf("acl list --topic orders --operation write:\n%s", out)
	}
	out, errOut, code := run("acl", "delete", "--principal", "User:bob")
	if code != 0 || strings.Count(out, "deleted: ") != 3 || !strings.Contains(errOut, "3 ACLs deleted") {
		t.Errorf("acl delete --principal User:bob: exit %d\n%s%s", code, out, errOut)
	}
	if out, _, _ := run("acl", "list"); strings.Contains(out, "User:bob") {
		t.Errorf("bob's ACLs are still listed:\n%s", out)
	}
	if _, errOut, code := run("acl", "delete", "--all"); code != 0 || !strings.Contains(errOut, "6 ACLs deleted") {
		t.Errorf("acl delete --all: exit %d, %s", code, errOut)
	}
}

func TestTokenCLI(t *testing.T) {
	dir := t.TempDir()
	run := func(args ...string) (string, string, int) {
		return runBinary(t, dir, "", append([]string{"--data", "data"}, args...)...)
	}
	if _, errOut, code := run("token", "create", "ci", "--user", "alice"); code != 1 || !strings.Contains(errOut, `no such user "alice"`) {
		t.Errorf("a token for an unknown user: exit %d, %s", code, errOut)
	}
	for _, u := range []string{"alice", "bob"} {
		if _, errOut, code := runBinary(t, dir, "pw\n", "--data", "data", "user", "add", u, "--password-stdin"); code != 0 {
			t.Fatal(errOut)
		}
	}
	secret, errOut, code := run("token", "create", "ci", "--user", "alice")
	secret = strings.TrimSpace(secret)
	if code != 0 || !strings.HasPrefix(secret, "pbk_") || strings.Contains(secret, "\n") || !strings.Contains(errOut, "not shown again") {
		t.Fatalf("token create: exit %d, stdout %q (want the secret alone), stderr %q", code, secret, errOut)
	}
	for _, args := range [][]string{{"token", "create", "ci2"}, {"token", "create", "bad name", "--user", "a"}, {"token", "create", "x", "--user", "a b"}} {
		if _, _, code := run(args...); code != 2 {
			t.Errorf("passbook %s: exit %d, want 2", strings.Join(args, " "), code)
		}
	}
	if _, errOut, code := run("token", "create", "ci", "--user", "bob"); code != 1 || !strings.Contains(errOut, "exists") {
		t.Errorf("a second token ci: exit %d, %s", code, errOut)
	}
	out, _, _ := run("token", "list")
	if !strings.Contains(out, "ci     alice") || strings.Contains(out, secret) {
		t.Errorf("token list:\n%s", out)
	}
	stored, _ := os.ReadFile(filepath.Join(dir, "data", "security", "tokens.json"))
	if strings.Contains(string(stored), strings.TrimPrefix(secret, "pbk_")) {
		t.Error("tokens.json holds the secret")
	}
	if out, _, code := run("token", "revoke", "ci"); code != 0 || !strings.Contains(out, "token ci revoked") {
		t.Errorf("token revoke: exit %d, %s", code, out)
	}
	if _, errOut, code := run("token", "revoke", "ci"); code != 1 || !strings.Contains(errOut, `no such token "ci"`) {
		t.Errorf("revoking twice: exit %d, %s", code, errOut)
	}
}

// serve refuses settings that would expose data, before it opens or
// creates anything.
func TestServe_SecurityFlagsRefused(t *testing.T) {
	dir := t.TempDir()
	certs := testcerts.Write(t, dir, "alice")
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--kafka", "0.0.0.0:0"}, "--kafka 0.0.0.0:0 is reachable beyond this machine"},
		{[]string{"--kafka", ":9092"}, "reachable beyond this machine"},
		{[]string{"--kafka", "0.0.0.0:0", "--tls-cert", certs.CertFile, "--tls-key", certs.KeyFile}, "--sasl (or --tls-client-ca)"},
		{[]string{"--kafka", "0.0.0.0:0", "--sasl", "scram-sha-256"}, "--tls-cert/--tls-key"},
		{[]string{"--http", "0.0.0.0:0"}, "--http 0.0.0.0:0 is reachable beyond this machine"},
		{[]string{"--sasl", "plain"}, "--sasl plain sends passwords as they are"},
		{[]string{"--sasl", "gssapi"}, `unknown SASL mechanism "gssapi"`},
		{[]string{"--tls-cert", certs.CertFile}, "--tls-cert and --tls-key go together"},
		{[]string{"--tls-cert", certs.CertFile, "--tls-key", certs.CAFile}, "TLS certificate"},
		{[]string{"--tls-client-ca", certs.CAFile}, "--tls-client-ca needs --tls-cert"},
		{[]string{"--super-users", "User:admin"}, "need --authorize"},
		{[]string{"--authorize", "--super-users", "admin"}, "want User:NAME"},
		{[]string{"--connections-max-reauth", "1m"}, "it needs --sasl"},
		{[]string{"--sasl", "scram-sha-512", "--connections-max-reauth", "-1s"}, "negative"},
		{[]string{"--http-metrics-auth"}, "needs authentication on"},
		{[]string{"--http-cors-origin", "*"}, "--http-cors-origin"},
		{[]string{"--http-cors-origin", "app.example"}, "want scheme://host"},
		{[]string{"--http-allowed-hosts", "a/b"}, "--http-allowed-hosts"},
	}
	for _, tt := range tests {
		data := filepath.Join(t.TempDir(), "data")
		_, errOut, code := runBinary(t, dir, "", append([]string{"--data", data, "serve"}, tt.args...)...)
		if code != 2 || !strings.Contains(errOut, tt.want) {
			t.Errorf("serve %s: exit %d, stderr %q; want exit 2 and %q", strings.Join(tt.args, " "), code, errOut, tt.want)
		}
		if _, err := os.Stat(data); err == nil {
			t.Errorf("serve %s: refused, but created the data directory", strings.Join(tt.args, " "))
		}
	}
}

// A user added with the CLI while serve runs can authenticate within a
// second or so, and a deleted one no longer can.
func TestServe_UserAddedWhileRunning(t *testing.T) {
	dir := t.TempDir()
	p, _, _ := launchServe(t, dir, 20*time.Second, 15*time.Second, "--sasl", "scram-sha-512")
	ping := func(password string) error {
		cl, err := kgo.NewClient(kgo.SeedBrokers(p.kafkaAddr), kgo.SASL(scram.Auth{User: "dave", Pass: password}.AsSha512Mechanism()),
			kgo.RetryTimeout(time.Second), kgo.RequestRetries(0))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return cl.Ping(ctx)
	}
	if err := ping("pw"); err == nil {
		t.Fatal("an unknown user authenticated")
	}
	if _, errOut, code := runBinary(t, dir, "pw\n", "--data", dir, "user", "add", "dave", "--password-stdin"); code != 0 {
		t.Fatalf("user add while serve runs: exit %d: %s", code, errOut)
	}
	waitFor(t, 10*time.Second, "the new user to authenticate", func() bool { return ping("pw") == nil })
	if err := ping("wrong"); err == nil {
		t.Error("a wrong password authenticated")
	}
	if _, errOut, code := runBinary(t, dir, "", "--data", dir, "user", "delete", "dave"); code != 0 {
		t.Fatalf("user delete: exit %d: %s", code, errOut)
	}
	waitFor(t, 10*time.Second, "the deleted user to be refused", func() bool { return ping("pw") != nil })
}

// waitFor polls cond until it holds, failing the test after limit.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s", limit, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// A certificate replaced on disk is served after SIGHUP (or within a
// second of the change), without a restart.
func TestServe_TLSReloadOnSIGHUP(t *testing.T) {
	dir := t.TempDir()
	certDir := t.TempDir()
	first := testcerts.Write(t, certDir, "alice")
	p, _, _ := launchServe(t, dir, 20*time.Second, 15*time.Second, "--tls-cert", first.CertFile, "--tls-key", first.KeyFile)
	dial := func(cfg *tls.Config) error {
		cfg.ServerName = "localhost"
		c, err := tls.Dial("tcp", p.kafkaAddr, cfg)
		if err != nil {
			return err
		}
		return c.Close()
	}
	if err := dial(first.ClientConfig(false)); err != nil {
		t.Fatalf("TLS to the Kafka port: %v", err)
	}
	if err := dial(&tls.Config{}); err == nil {
		t.Fatal("a client that does not trust the CA completed a handshake")
	}
	second := testcerts.Write(t, certDir, "alice") // a new CA, the same file names
	if err := syscall.Kill(p.pid, syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the new certificate to be served", func() bool { return dial(second.ClientConfig(false)) == nil })
	if err := dial(first.ClientConfig(false)); err == nil {
		t.Error("the old certificate is still served after the reload")
	}
}
