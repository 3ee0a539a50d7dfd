package auth

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"strconv"
	"strings"
	"unicode/utf8"
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
		h, _ := hashOf(mechanism)
		return &scramSession{users: u, mechanism: mechanism, hash: h}, nil
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

// scramSession is SCRAM (RFC 5802, RFC 7677): client-first,
// server-first, client-final, server-final. It is written here rather
// than taken from a library because Kafka's server accepts a
// client-final nonce that only ends with the nonce it sent (librdkafka
// sends the client's nonce twice), and so must we.
type scramSession struct {
	users     *Users
	mechanism string
	hash      func() hash.Hash
	step      int

	name        string
	cred        Credential
	found       bool
	gs2         string // the client-first GS2 header, "n,,"
	firstBare   string // client-first without it
	serverFirst string
	nonce       string // client nonce + server nonce
	principal   string
}

// maxSCRAMMessage bounds a client message: real ones are ~100–200 bytes.
const maxSCRAMMessage = 4096

func (s *scramSession) Step(in []byte) ([]byte, bool, error) {
	s.step++
	switch {
	case s.step > 2:
		return nil, false, fmt.Errorf("%w: SCRAM takes two client messages", ErrMalformed)
	case len(in) > maxSCRAMMessage:
		return nil, false, fmt.Errorf("%w: a %d-byte SCRAM message", ErrMalformed, len(in))
	case !utf8.Valid(in):
		return nil, false, fmt.Errorf("%w: a SCRAM message that is not UTF-8", ErrMalformed)
	case s.step == 1:
		out, err := s.first(string(in))
		return []byte(out), false, err
	}
	out, err := s.final(string(in))
	if err != nil {
		return nil, false, err
	}
	return []byte(out), true, nil
}

func (s *scramSession) Principal() string { return s.principal }

// first reads client-first-message = gs2-header client-first-message-bare,
// gs2-header = "n," or "y," [authzid] ",", bare = "n=" saslname ",r=" nonce
// ["," extensions]; and answers server-first-message = "r=" nonce ",s="
// salt ",i=" iterations.
func (s *scramSession) first(msg string) (string, error) {
	cb, rest, ok := strings.Cut(msg, ",")
	if !ok {
		return "", fmt.Errorf("%w: SCRAM client-first message without a GS2 header", ErrMalformed)
	}
	switch {
	case cb == "n" || cb == "y":
	case strings.HasPrefix(cb, "p="):
		return "", fmt.Errorf("%w: SCRAM channel binding is not supported", ErrMalformed)
	default:
		return "", fmt.Errorf("%w: SCRAM GS2 header %q", ErrMalformed, cb)
	}
	authz, bare, ok := strings.Cut(rest, ",")
	if !ok {
		return "", fmt.Errorf("%w: SCRAM client-first message without a bare part", ErrMalformed)
	}
	s.gs2, s.firstBare = cb+","+authz+",", bare
	attrs := strings.Split(bare, ",")
	if len(attrs) < 2 || !strings.HasPrefix(attrs[0], "n=") || !strings.HasPrefix(attrs[1], "r=") {
		return "", fmt.Errorf("%w: SCRAM client-first message wants n=USER,r=NONCE", ErrMalformed)
	}
	name, err := saslName(attrs[0][2:])
	if err != nil {
		return "", err
	}
	if authz != "" {
		a, err := saslName(strings.TrimPrefix(authz, "a="))
		if err != nil || !strings.HasPrefix(authz, "a=") {
			return "", fmt.Errorf("%w: SCRAM authorization id %q", ErrMalformed, authz)
		}
		if a != name {
			return "", fmt.Errorf("%w: an authorization id other than the user name is not supported", ErrAuthentication)
		}
	}
	cnonce := attrs[1][2:]
	if err := checkNonce(cnonce); err != nil {
		return "", err
	}
	s.name = name
	cred, found, err := s.users.credential(name, s.mechanism)
	if err != nil {
		return "", err
	}
	if !found {
		cred = s.users.fake(name, s.mechanism)
	}
	s.cred, s.found = cred, found
	var raw [24]byte
	rand.Read(raw[:])
	s.nonce = cnonce + base64.RawURLEncoding.EncodeToString(raw[:])
	s.serverFirst = "r=" + s.nonce + ",s=" + base64.StdEncoding.EncodeToString(cred.Salt) + ",i=" + strconv.Itoa(cred.Iterations)
	return s.serverFirst, nil
}

// final reads client-final-message = "c=" base64(gs2-header) ",r=" nonce
// ["," extensions] ",p=" proof, checks the proof and answers
// server-final-message = "v=" server signature.
func (s *scramSession) final(msg string) (string, error) {
	withoutProof, proofAttr, ok := cutLast(msg, ",p=")
	if !ok {
		return "", fmt.Errorf("%w: SCRAM client-final message without a proof", ErrMalformed)
	}
	attrs := strings.Split(withoutProof, ",")
	if len(attrs) < 2 || !strings.HasPrefix(attrs[0], "c=") || !strings.HasPrefix(attrs[1], "r=") {
		return "", fmt.Errorf("%w: SCRAM client-final message wants c=…,r=…,p=…", ErrMalformed)
	}
	cbind, err := base64.StdEncoding.DecodeString(attrs[0][2:])
	if err != nil {
		return "", fmt.Errorf("%w: SCRAM channel binding attribute: %w", ErrMalformed, err)
	}
	proof, err := base64.StdEncoding.DecodeString(proofAttr)
	if err != nil {
		return "", fmt.Errorf("%w: SCRAM proof: %w", ErrMalformed, err)
	}
	// Kafka's ScramSaslServer checks endsWith, not equality: librdkafka
	// repeats the client nonce before the one the server sent.
	if string(cbind) != s.gs2 || !strings.HasSuffix(attrs[1][2:], s.nonce) {
		return "", ErrAuthentication
	}
	authMsg := s.firstBare + "," + s.serverFirst + "," + withoutProof
	sig := hmacOf(s.hash, s.cred.StoredKey, authMsg)
	if len(proof) != len(sig) {
		return "", ErrAuthentication
	}
	clientKey := make([]byte, len(sig))
	for i := range sig {
		clientKey[i] = proof[i] ^ sig[i]
	}
	sum := s.hash()
	sum.Write(clientKey)
	if subtle.ConstantTimeCompare(sum.Sum(nil), s.cred.StoredKey) != 1 || !s.found {
		return "", ErrAuthentication
	}
	s.principal = User(s.name)
	return "v=" + base64.StdEncoding.EncodeToString(hmacOf(s.hash, s.cred.ServerKey, authMsg)), nil
}

func hmacOf(h func() hash.Hash, key []byte, msg string) []byte {
	mac := hmac.New(h, key)
	mac.Write([]byte(msg))
	return mac.Sum(nil)
}

func cutLast(s, sep string) (before, after string, ok bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}

// saslName decodes a SCRAM saslname: "=2C" is ',' and "=3D" is '='.
func saslName(s string) (string, error) {
	if !strings.Contains(s, "=") {
		if s == "" {
			return "", fmt.Errorf("%w: SCRAM empty user name", ErrMalformed)
		}
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '=' {
			b.WriteByte(s[i])
			continue
		}
		switch {
		case strings.HasPrefix(s[i:], "=2C"):
			b.WriteByte(',')
		case strings.HasPrefix(s[i:], "=3D"):
			b.WriteByte('=')
		default:
			return "", fmt.Errorf("%w: SCRAM user name %q: '=' not followed by 2C or 3D", ErrMalformed, s)
		}
		i += 2
	}
	return b.String(), nil
}

// checkNonce: printable ASCII but ','.
func checkNonce(n string) error {
	if n == "" {
		return fmt.Errorf("%w: SCRAM empty nonce", ErrMalformed)
	}
	for i := 0; i < len(n); i++ {
		if c := n[i]; c < 0x21 || c > 0x7e || c == ',' {
			return fmt.Errorf("%w: SCRAM nonce with byte %#x", ErrMalformed, c)
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
