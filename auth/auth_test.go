package auth_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/passbook-log/passbook/auth"
	"github.com/passbook-log/passbook/internal/jsonfile"
	"github.com/xdg-go/scram"
)

func newUsers(t *testing.T) (*auth.Users, string) {
	t.Helper()
	dir := t.TempDir()
	u, err := auth.OpenUsers(dir)
	if err != nil {
		t.Fatal(err)
	}
	return u, dir
}

// scramLogin runs a whole SCRAM exchange with the xdg-go client (which
// librdkafka's and Kafka's clients agree with: RFC 5802 test vectors).
func scramLogin(t *testing.T, u *auth.Users, mechanism, name, password string) (string, error) {
	t.Helper()
	gen := scram.SHA256
	if mechanism == auth.SCRAMSHA512 {
		gen = scram.SHA512
	}
	client, err := gen.NewClientUnprepped(name, password, "")
	if err != nil {
		t.Fatal(err)
	}
	conv := client.NewConversation()
	sess, err := u.NewSession(mechanism)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := conv.Step("")
	if err != nil {
		t.Fatal(err)
	}
	for {
		out, done, err := sess.Step([]byte(msg))
		if err != nil {
			return "", err
		}
		if done {
			if _, err := conv.Step(string(out)); err != nil {
				t.Fatalf("client refused the server's final message: %v", err)
			}
			if !conv.Valid() {
				t.Fatal("client says the server did not prove it knows the credential")
			}
			return sess.Principal(), nil
		}
		if msg, err = conv.Step(string(out)); err != nil {
			t.Fatal(err)
		}
	}
}

func TestSCRAM_Exchange(t *testing.T) {
	u, _ := newUsers(t)
	for _, m := range auth.SCRAMMechanisms {
		if err := u.Set("alice", m, []byte("s3cret"), 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := u.Set("bob", auth.SCRAMSHA256, []byte("hunter2"), 8192); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		mechanism, name, password string
		want                      string // principal, or "" for a failure
	}{
		{auth.SCRAMSHA256, "alice", "s3cret", "User:alice"},
		{auth.SCRAMSHA512, "alice", "s3cret", "User:alice"},
		{auth.SCRAMSHA256, "bob", "hunter2", "User:bob"},
		{auth.SCRAMSHA256, "alice", "wrong", ""},
		{auth.SCRAMSHA512, "bob", "hunter2", ""}, // bob has no SHA-512 credential
		{auth.SCRAMSHA256, "nobody", "s3cret", ""},
		{auth.SCRAMSHA512, "nobody", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.mechanism+"/"+tt.name+"/"+tt.password, func(t *testing.T) {
			got, err := scramLogin(t, u, tt.mechanism, tt.name, tt.password)
			if tt.want == "" {
				if !errors.Is(err, auth.ErrAuthentication) {
					t.Fatalf("err = %v, want ErrAuthentication", err)
				}
				if err.Error() != auth.ErrAuthentication.Error() {
					t.Errorf("err = %q: a failure must not say why (unknown user or wrong password)", err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("principal %q, err %v; want %q", got, err, tt.want)
			}
		})
	}
}

// An unknown user gets a server-first message shaped like a real
// user's, with the same salt each time: the exchange does not tell
// whether the user exists.
func TestSCRAM_UnknownUserLooksReal(t *testing.T) {
	u, _ := newUsers(t)
	if err := u.Set("alice", auth.SCRAMSHA256, []byte("pw"), 0); err != nil {
		t.Fatal(err)
	}
	first := func(name string) string {
		s, _ := u.NewSession(auth.SCRAMSHA256)
		out, done, err := s.Step([]byte("n,,n=" + name + ",r=abcdefgh"))
		if err != nil || done {
			t.Fatalf("%s: client-first refused: %v", name, err)
		}
		_, rest, _ := strings.Cut(string(out), ",s=")
		return rest // salt and iterations
	}
	a, b := first("nobody"), first("nobody")
	if a != b {
		t.Errorf("an unknown user's salt changes between attempts: %q, %q", a, b)
	}
	real := first("alice")
	if len(real) != len(a) || !strings.HasSuffix(a, ",i=4096") {
		t.Errorf("unknown user's salt,iterations %q do not look like a real user's %q", a, real)
	}
}

func TestSCRAM_Malformed(t *testing.T) {
	u, _ := newUsers(t)
	u.Set("alice", auth.SCRAMSHA256, []byte("pw"), 0)
	for _, first := range []string{"", "garbage", "p=tls-unique,,n=alice,r=x", "n,a=bob,n=alice,r=abc", "n,,r=abc", strings.Repeat("x", 5000)} {
		s, _ := u.NewSession(auth.SCRAMSHA256)
		_, done, err := s.Step([]byte(first))
		if err == nil || done {
			t.Errorf("client-first %.40q accepted", first)
		}
	}
	s, _ := u.NewSession(auth.SCRAMSHA256)
	if _, _, err := s.Step([]byte("n,,n=alice,r=abcdef")); err != nil {
		t.Fatal(err)
	}
	for _, final := range []string{"", "c=biws,r=wrongnonce,p=AAAA"} {
		s2, _ := u.NewSession(auth.SCRAMSHA256)
		s2.Step([]byte("n,,n=alice,r=abcdef"))
		if _, done, err := s2.Step([]byte(final)); err == nil || done {
			t.Errorf("client-final %q accepted", final)
		}
	}
	if _, done, err := s.Step([]byte("c=biws,r=abcdef,p=AAAA")); err == nil || done {
		t.Error("a bad proof was accepted")
	}
	if _, _, err := s.Step([]byte("more")); err == nil {
		t.Error("a third message was accepted")
	}
}

func TestPLAIN(t *testing.T) {
	u, _ := newUsers(t)
	u.Set("alice", auth.SCRAMSHA512, []byte("pw"), 0)
	u.Set("carol", auth.SCRAMSHA256, []byte("pw2"), 0)
	tests := []struct {
		msg  string
		want string
		err  error
	}{
		{"\x00alice\x00pw", "User:alice", nil},
		{"alice\x00alice\x00pw", "User:alice", nil},
		{"\x00carol\x00pw2", "User:carol", nil},
		{"\x00alice\x00nope", "", auth.ErrAuthentication},
		{"\x00nobody\x00pw", "", auth.ErrAuthentication},
		{"bob\x00alice\x00pw", "", auth.ErrAuthentication},
		{"alice\x00pw", "", auth.ErrMalformed},
		{"\x00\x00pw", "", auth.ErrMalformed},
		{"", "", auth.ErrMalformed},
	}
	for _, tt := range tests {
		s, _ := u.NewSession(auth.PLAIN)
		_, done, err := s.Step([]byte(tt.msg))
		if !errors.Is(err, tt.err) || done != (tt.err == nil) || s.Principal() != tt.want {
			t.Errorf("PLAIN %q: principal %q, done %v, err %v; want %q, %v", tt.msg, s.Principal(), done, err, tt.want, tt.err)
		}
	}
}

func TestUsers_SetSaltedMatchesClient(t *testing.T) {
	u, _ := newUsers(t)
	salt := []byte("0123456789abcdef")
	for _, m := range auth.SCRAMMechanisms {
		sp, err := auth.SaltedPassword(m, []byte("pw"), salt, 4096)
		if err != nil {
			t.Fatal(err)
		}
		if err := u.SetSalted("dave", m, salt, sp, 4096); err != nil {
			t.Fatal(err)
		}
		if p, err := scramLogin(t, u, m, "dave", "pw"); err != nil || p != "User:dave" {
			t.Fatalf("%s: %q, %v", m, p, err)
		}
	}
	if err := u.Verify("dave", []byte("pw")); err != nil {
		t.Fatal(err)
	}
}

func TestUsers_RefusesBadInputAndChangesNothing(t *testing.T) {
	u, _ := newUsers(t)
	u.Set("alice", auth.SCRAMSHA256, []byte("pw"), 0)
	before, _ := u.List()
	bad := []struct {
		name, mechanism, password string
		iterations                int
	}{
		{"", auth.SCRAMSHA256, "pw", 0},
		{"has space", auth.SCRAMSHA256, "pw", 0},
		{"ctl\x01", auth.SCRAMSHA256, "pw", 0},
		{"alice", auth.PLAIN, "pw", 0},
		{"alice", "SCRAM-SHA-1", "pw", 0},
		{"alice", auth.SCRAMSHA256, "", 0},
		{"alice", auth.SCRAMSHA256, strings.Repeat("p", 1025), 0},
		{"alice", auth.SCRAMSHA256, "pw", 4095},
		{"alice", auth.SCRAMSHA256, "pw", 16385},
	}
	for _, b := range bad {
		if err := u.Set(b.name, b.mechanism, []byte(b.password), b.iterations); err == nil {
			t.Errorf("Set(%q, %q, %d-byte password, %d) accepted", b.name, b.mechanism, len(b.password), b.iterations)
		}
	}
	if err := u.Delete("nobody", ""); !errors.Is(err, auth.ErrUnknownUser) {
		t.Errorf("Delete(nobody) = %v", err)
	}
	if err := u.Delete("alice", auth.SCRAMSHA512); !errors.Is(err, auth.ErrUnknownUser) {
		t.Errorf("Delete(alice, SHA-512) = %v", err)
	}
	after, _ := u.List()
	if len(after) != 1 || len(before) != 1 || after[0].Name != "alice" || len(after[0].Credentials) != 1 {
		t.Errorf("users changed by refused calls: %+v → %+v", before, after)
	}
	if err := u.Verify("alice", []byte("pw")); err != nil {
		t.Error("alice's password stopped working:", err)
	}
}

// Two stores on one directory are two processes: a change by one is
// seen by the other within jsonfile.Recheck, and concurrent changes
// all land.
func TestUsers_SharedBetweenProcesses(t *testing.T) {
	dir := t.TempDir()
	a, _ := auth.OpenUsers(dir)
	b, _ := auth.OpenUsers(dir)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			s := a
			if i%2 == 1 {
				s = b
			}
			if err := s.Set("user"+string(rune('a'+i)), auth.SCRAMSHA256, []byte("pw"), 0); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	fresh, _ := auth.OpenUsers(dir)
	list, err := fresh.List()
	if err != nil || len(list) != 8 {
		t.Fatalf("after 8 concurrent adds from two stores: %d users, %v", len(list), err)
	}
	if err := fresh.Verify("usera", []byte("pw")); err != nil {
		t.Fatal(err)
	}
	if err := b.Delete("usera", ""); err != nil {
		t.Fatal(err)
	}
	time.Sleep(jsonfile.Recheck) // the promise: another process's change is seen within it
	if err := fresh.Verify("usera", []byte("pw")); !errors.Is(err, auth.ErrAuthentication) {
		t.Errorf("a user deleted by another process still verifies (its password was checked before): err = %v", err)
	}
}

func TestUsers_VerifyCacheForgetsChanges(t *testing.T) {
	u, _ := newUsers(t)
	u.Set("alice", auth.SCRAMSHA512, []byte("old"), 0)
	if err := u.Verify("alice", []byte("old")); err != nil {
		t.Fatal(err)
	}
	u.Set("alice", auth.SCRAMSHA512, []byte("new"), 0)
	if err := u.Verify("alice", []byte("old")); !errors.Is(err, auth.ErrAuthentication) {
		t.Errorf("the old password still works after a change: %v", err)
	}
	if err := u.Verify("alice", []byte("new")); err != nil {
		t.Error(err)
	}
}

func TestParseMechanism(t *testing.T) {
	for in, want := range map[string]string{"plain": auth.PLAIN, "Scram-Sha-256": auth.SCRAMSHA256, "SCRAM-SHA-512": auth.SCRAMSHA512} {
		if got, err := auth.ParseMechanism(in); err != nil || got != want {
			t.Errorf("ParseMechanism(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := auth.ParseMechanism("gssapi"); !errors.Is(err, auth.ErrUnknownMechanism) {
		t.Errorf("gssapi: %v", err)
	}
}

// librdkafka sends its own nonce again before the server's (which
// starts with it); Kafka's server accepts a nonce that ends with the one
// it sent, and so does ours — with the proof computed over what the
// client sent.
func TestSCRAM_LibrdkafkaNonce(t *testing.T) {
	u, _ := newUsers(t)
	u.Set("alice", auth.SCRAMSHA256, []byte("pw1"), 0)
	s, _ := u.NewSession(auth.SCRAMSHA256)
	const cnonce = "d?kec98Ef>9J}kQuI2zykU}]Y9k<VrfV"
	first := "n,,n=alice,r=" + cnonce
	out, _, err := s.Step([]byte(first))
	if err != nil {
		t.Fatal(err)
	}
	attrs := strings.Split(string(out), ",")
	snonce := strings.TrimPrefix(attrs[0], "r=")
	salt, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(attrs[1], "s="))
	sp, _ := auth.SaltedPassword(auth.SCRAMSHA256, []byte("pw1"), salt, 4096)
	withoutProof := "c=biws,r=" + cnonce + snonce
	authMsg := first[3:] + "," + string(out) + "," + withoutProof
	mac := func(key []byte, msg string) []byte {
		m := hmac.New(sha256.New, key)
		m.Write([]byte(msg))
		return m.Sum(nil)
	}
	clientKey := mac(sp, "Client Key")
	stored := sha256.Sum256(clientKey)
	sig := mac(stored[:], authMsg)
	for i := range sig {
		sig[i] ^= clientKey[i]
	}
	final, done, err := s.Step([]byte(withoutProof + ",p=" + base64.StdEncoding.EncodeToString(sig)))
	if err != nil || !done || s.Principal() != "User:alice" {
		t.Fatalf("librdkafka's client-final refused: %v", err)
	}
	if want := "v=" + base64.StdEncoding.EncodeToString(mac(mac(sp, "Server Key"), authMsg)); string(final) != want {
		t.Errorf("server-final %q, want %q", final, want)
	}
}
