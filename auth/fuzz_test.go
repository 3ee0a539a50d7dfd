package auth_test

import (
	"errors"
	"testing"

	"github.com/passbook-log/passbook/auth"
)

// FuzzSession feeds arbitrary client messages to each mechanism: a
// session never panics, never authenticates without the password, and
// fails only with ErrAuthentication or ErrMalformed.
func FuzzSession(f *testing.F) {
	f.Add(uint8(0), []byte("\x00alice\x00pw"), []byte(nil))
	f.Add(uint8(1), []byte("n,,n=alice,r=abcdef"), []byte("c=biws,r=abcdef,p=AAAA"))
	f.Add(uint8(2), []byte("n,a=alice,n=alice,r=x"), []byte("c=biws,r=x,p=dGVzdA=="))
	f.Add(uint8(1), []byte("n,,n=al=2Cice,r=abc,ext=1"), []byte("c=,r="))
	u, err := auth.OpenUsers(f.TempDir())
	if err != nil {
		f.Fatal(err)
	}
	for _, m := range auth.SCRAMMechanisms {
		if err := u.Set("alice", m, []byte("pw"), 0); err != nil {
			f.Fatal(err)
		}
	}
	mechs := []string{auth.PLAIN, auth.SCRAMSHA256, auth.SCRAMSHA512}
	f.Fuzz(func(t *testing.T, which uint8, first, second []byte) {
		m := mechs[int(which)%len(mechs)]
		s, err := u.NewSession(m)
		if err != nil {
			t.Fatal(err)
		}
		for i, msg := range [][]byte{first, second} {
			_, done, err := s.Step(msg)
			if err != nil {
				if !errors.Is(err, auth.ErrAuthentication) && !errors.Is(err, auth.ErrMalformed) {
					t.Fatalf("%s step %d: error %v is neither ErrAuthentication nor ErrMalformed", m, i+1, err)
				}
				return
			}
			if done {
				// Only PLAIN with the right password can get here from
				// fuzzed input: SCRAM needs a proof of the key.
				if m != auth.PLAIN || s.Principal() != "User:alice" {
					t.Fatalf("%s authenticated %q from fuzzed input %q, %q", m, s.Principal(), first, second)
				}
				return
			}
		}
	})
}

func FuzzParsePlain(f *testing.F) {
	f.Add([]byte("\x00alice\x00pw"))
	f.Add([]byte("a\x00b\x00c\x00d"))
	f.Fuzz(func(t *testing.T, msg []byte) {
		authz, name, pw, err := auth.ParsePlain(msg)
		if err != nil {
			if !errors.Is(err, auth.ErrMalformed) {
				t.Fatal(err)
			}
			return
		}
		if name == "" || len(pw) == 0 || len(authz)+len(name)+len(pw)+2 != len(msg) {
			t.Fatalf("ParsePlain(%q) = %q, %q, %q", msg, authz, name, pw)
		}
	})
}
