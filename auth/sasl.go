package auth

import (
	"bytes"
	"crypto/sha256"
	"crypto/sha512"
	"errors"
	"fmt"
	"strings"

	"github.com/xdg-go/scram"
)

// Session is the server side of one SASL exchange.
type Session interface {
	// Step takes the client's next message and returns the server's
	// reply. done is true once the client is authenticated; out is then
	// the last server message (empty for PLAIN). An error ends the
	// exchange: it wraps ErrAuthentication or ErrMalformed.
	Step(in []byte) (out []byte, done bool, err error)
	// Principal is "User:name", once done.
	Principal() string
}

// NewSession starts a server-side SASL exchange for mechanism.
func (u *Users) NewSession(mechanism string) (Session, error) {
	switch mechanism {
	case PLAIN:
		return &plainSession{users: u}, nil
	case SCRAMSHA256, SCRAMSHA512:
		gen := scram.SHA256
		if mechanism == SCRAMSHA512 {
			gen = scram.SHA512
		}
		srv, err := gen.NewServer(func(name string) (scram.StoredCredentials, error) {
			c, ok, err := u.credential(name, mechanism)
			if err != nil {
				return scram.StoredCredentials{}, err
			}
			if !ok {
				c = u.fake(name, mechanism)
			}
			return scram.StoredCredentials{
				KeyFactors: scram.KeyFactors{Salt: string(c.Salt), Iters: c.Iterations},
				StoredKey:  c.StoredKey,
				ServerKey:  c.ServerKey,
			}, nil
		})
		if err != nil {
			return nil, err
		}
		return &scramSession{mechanism: mechanism, conv: srv.NewConversation()}, nil
	}
	return nil, fmt.Errorf("%w %q", ErrUnknownMechanism, mechanism)
}

// plainSession is SASL PLAIN (RFC 4616): one message,
// authzid NUL authcid NUL password.
type plainSession struct {
	users     *Users
	principal string
	done      bool
}

func (s *plainSession) Step(in []byte) ([]byte, bool, error) {
	if s.done {
		return nil, false, fmt.Errorf("%w: PLAIN takes one message", ErrMalformed)
	}
	s.done = true
	authz, name, password, err := ParsePlain(in)
	if err != nil {
		return nil, false, err
	}
	if authz != "" && authz != name {
		return nil, false, fmt.Errorf("%w: an authorization id other than the user name is not supported", ErrAuthentication)
	}
	if err := s.users.Verify(name, password); err != nil {
		return nil, false, err
	}
	s.principal = User(name)
	return nil, true, nil
}

func (s *plainSession) Principal() string { return s.principal }

// ParsePlain splits a PLAIN message into its three parts.
func ParsePlain(msg []byte) (authzID, name string, password []byte, err error) {
	parts := bytes.Split(msg, []byte{0})
	if len(parts) != 3 {
		return "", "", nil, fmt.Errorf("%w: PLAIN wants authzid NUL user NUL password, got %d NUL-separated parts", ErrMalformed, len(parts))
	}
	if len(parts[1]) == 0 || len(parts[2]) == 0 {
		return "", "", nil, fmt.Errorf("%w: PLAIN with an empty user or password", ErrMalformed)
	}
	if len(parts[2]) > MaxPasswordBytes {
		return "", "", nil, fmt.Errorf("%w: PLAIN password over %d bytes", ErrMalformed, MaxPasswordBytes)
	}
	return string(parts[0]), string(parts[1]), parts[2], nil
}

// scramSession is SCRAM (RFC 5802, RFC 7677): client-first, server-first,
// client-final, server-final.
type scramSession struct {
	mechanism string
	conv      *scram.ServerConversation
	step      int
	principal string
}

// maxSCRAMMessage bounds a client message: real ones are ~100–200 bytes.
const maxSCRAMMessage = 4096

func (s *scramSession) Step(in []byte) ([]byte, bool, error) {
	s.step++
	if s.step > 2 {
		return nil, false, fmt.Errorf("%w: SCRAM takes two client messages", ErrMalformed)
	}
	if len(in) > maxSCRAMMessage {
		return nil, false, fmt.Errorf("%w: a %d-byte SCRAM message", ErrMalformed, len(in))
	}
	if s.step == 1 {
		if err := checkClientFirst(in); err != nil {
			return nil, false, err
		}
	}
	out, err := s.conv.Step(string(in))
	switch {
	case err == nil:
	case s.step == 2 && out == "e=invalid-proof":
		return nil, false, ErrAuthentication
	case s.step == 2 && strings.HasPrefix(out, "e="):
		// A nonce or channel binding that does not match what was sent.
		return nil, false, fmt.Errorf("%w: %s", ErrAuthentication, strings.TrimPrefix(out, "e="))
	default:
		return nil, false, fmt.Errorf("%w: %s: %w", ErrMalformed, s.mechanism, err)
	}
	if s.step == 1 {
		return []byte(out), false, nil
	}
	if !s.conv.Valid() {
		return nil, false, ErrAuthentication
	}
	s.principal = User(s.conv.Username())
	return []byte(out), true, nil
}

func (s *scramSession) Principal() string { return s.principal }

// checkClientFirst refuses what Kafka refuses in a client-first message
// beyond what the SCRAM library checks: an authorization id other than
// the user, channel binding (Kafka has none), and extensions.
func checkClientFirst(in []byte) error {
	msg := string(in)
	gs2, rest, ok := strings.Cut(msg, ",")
	if !ok {
		return fmt.Errorf("%w: SCRAM client-first message without a GS2 header", ErrMalformed)
	}
	if strings.HasPrefix(gs2, "p") {
		return fmt.Errorf("%w: SCRAM channel binding is not supported", ErrMalformed)
	}
	authz, rest, ok := strings.Cut(rest, ",")
	if !ok {
		return fmt.Errorf("%w: SCRAM client-first message without a bare part", ErrMalformed)
	}
	if authz != "" {
		user, _, _ := strings.Cut(rest, ",")
		if strings.TrimPrefix(authz, "a=") != strings.TrimPrefix(user, "n=") {
			return fmt.Errorf("%w: an authorization id other than the user name is not supported", ErrAuthentication)
		}
	}
	return nil
}

// SaltedPassword derives the salted password of a SCRAM mechanism, as a
// client does before AlterUserScramCredentials.
func SaltedPassword(mechanism string, password, salt []byte, iterations int) ([]byte, error) {
	switch mechanism {
	case SCRAMSHA256:
		return pbkdf2Key(sha256.New, password, salt, iterations)
	case SCRAMSHA512:
		return pbkdf2Key(sha512.New, password, salt, iterations)
	}
	return nil, errors.New("auth: not a SCRAM mechanism: " + mechanism)
}
