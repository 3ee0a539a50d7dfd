package kafka

// SASL on the Kafka port, as a Kafka SASL_PLAINTEXT or SASL_SSL listener
// does it (Options.SASLMechanisms; docs/kafka.md, "Security").
//
// A connection starts unauthenticated. Before it authenticates, only
// ApiVersions, SaslHandshake and SaslAuthenticate are served: any other
// request closes the connection unanswered (Kafka's IllegalSaslState).
// SaslHandshake v1 names the mechanism and SaslAuthenticate requests
// carry the tokens (17_sasl_handshake.go, 36_sasl_authenticate.go);
// after SaslHandshake v0, as old clients send it, the tokens follow as
// raw size-prefixed frames with no Kafka header, answered the same way
// (rawToken). A failed authentication is answered with
// SASL_AUTHENTICATION_FAILED and Kafka's message, the same for an
// unknown user and a wrong password, and the connection is closed once
// the answer is written.
//
// With Options.ConnectionsMaxReauth (connections.max.reauth.ms), a
// session lasts that long: SaslAuthenticate v1+ tells the client
// (session_lifetime_ms), and the client re-authenticates on the same
// connection before it ends (KIP-368: SaslHandshake then
// SaslAuthenticate, as the same principal). A request other than that
// on a session that has ended closes the connection, as Kafka does; so
// is a client that cannot re-authenticate (it authenticated with
// SaslAuthenticate v0 or raw tokens) at its first request after the end.
//
// The SASL state is touched only by the connection's reader goroutine,
// which decodes and handles requests one after another.

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/passbook-log/passbook/auth"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// saslMaxReceive bounds a frame read before authentication (Kafka's
// sasl.server.max.receive.size default): an unauthenticated client may
// not make the server hold 100 MiB.
const saslMaxReceive = 512 << 10

// errSecurityClose wraps the reasons a connection is closed for its
// security state; they are counted and logged (rate-limited) where they
// happen, and the connection's close is logged at debug level.
var errSecurityClose = errors.New("kafka: connection closed")

// saslState is a connection's SASL progress.
type saslState struct {
	mechanism string       // of the last SaslHandshake
	session   auth.Session // the exchange in progress, if any
	raw       bool         // SaslHandshake v0: the tokens come as raw frames
	// badMechanism is the message for a re-authentication that asked
	// for another mechanism than the connection's (Kafka refuses it at
	// the first token).
	badMechanism string
	sawV1        bool // a SaslAuthenticate v1+ in this exchange: the client can re-authenticate

	authenticated bool      // the first authentication completed
	reauth        bool      // the session can be renewed (it was made with SaslAuthenticate v1+)
	expires       time.Time // zero: never
}

// inExchange reports whether a handshake started an exchange that has
// not completed.
func (st *saslState) inExchange() bool { return st.session != nil || st.badMechanism != "" }

// securityStats are the server's counters of authentications, sessions
// and authorization, for /metrics (metrics.go).
type securityStats struct {
	// auths counts first authentications by mechanism (saslMechanisms
	// order, then "other" for a mechanism not served) and result.
	auths     [len(allMechanisms) + 1][2]atomic.Uint64
	reauths   [2]atomic.Uint64      // by result
	expired   atomic.Uint64         // connections closed at a request after their session ended
	tlsFailed atomic.Uint64         // TLS handshakes that failed
	denied    [maxKey]atomic.Uint64 // by API key
}

var allMechanisms = [...]string{auth.PLAIN, auth.SCRAMSHA256, auth.SCRAMSHA512}

const (
	resultSuccess = 0
	resultFailure = 1
)

var resultNames = [2]string{"success", "failure"}

// mechanismIndex is the index of mechanism in allMechanisms, or
// len(allMechanisms) ("other").
func mechanismIndex(mechanism string) int {
	if i := slices.Index(allMechanisms[:], mechanism); i >= 0 {
		return i
	}
	return len(allMechanisms)
}

func (s *Server) countAuth(mechanism string, reauth bool, result int) {
	if reauth {
		s.sec.reauths[result].Add(1)
		return
	}
	s.sec.auths[mechanismIndex(mechanism)][result].Add(1)
}

// validateSecurity checks the security options.
func (o *Options) validateSecurity() []error {
	var errs []error
	plain := false
	for _, m := range o.SASLMechanisms {
		name, err := auth.ParseMechanism(m)
		if err != nil || !slices.Contains(allMechanisms[:], name) {
			errs = append(errs, fmt.Errorf("SASL mechanism %q: want %s", m, strings.Join(allMechanisms[:], ", ")))
			continue
		}
		plain = plain || name == auth.PLAIN
	}
	if len(o.SASLMechanisms) > 0 && o.Users == nil {
		errs = append(errs, errors.New("SASL needs a user store (Options.Users): add users with `passbook user add`"))
	}
	if plain && o.TLS == nil && !o.Insecure {
		errs = append(errs, errors.New("PLAIN sends passwords in the clear: use TLS (--tls-cert/--tls-key) or --insecure"))
	}
	if o.ConnectionsMaxReauth < 0 {
		errs = append(errs, fmt.Errorf("connections.max.reauth %v is negative", o.ConnectionsMaxReauth))
	}
	return errs
}

// normalizeMechanisms spells each mechanism as Kafka does, once each,
// in the order given.
func normalizeMechanisms(ms []string) []string {
	var out []string
	for _, m := range ms {
		if name, err := auth.ParseMechanism(m); err == nil && !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}

func (s *Server) saslOn() bool { return len(s.o.SASLMechanisms) > 0 }

// checkSASL decides whether a request may be handled in the
// connection's SASL state; an error closes the connection unanswered.
func (c *conn) checkSASL(key kmsg.Key) error {
	if !c.s.saslOn() {
		return nil
	}
	st := &c.sasl
	if st.authenticated && !st.inExchange() {
		if key == kmsg.SASLHandshake && st.reauth {
			return nil // re-authentication, also after the session ended
		}
		if !st.expires.IsZero() && time.Now().After(st.expires) {
			c.s.sec.expired.Add(1)
			c.s.rateLog(slog.LevelInfo, "sasl_expired", "kafka: closing connection: its SASL session ended (connections.max.reauth.ms, --connections-max-reauth) and it did not re-authenticate",
				"remote", c.remote, "principal", c.principal, "api", key.Name(), "can_reauthenticate", st.reauth)
			return fmt.Errorf("%w: %s after the SASL session of %s ended", errSecurityClose, key.Name(), c.principal)
		}
		return nil
	}
	switch key {
	case kmsg.SASLHandshake, kmsg.SASLAuthenticate:
		return nil // the handlers check the order
	case kmsg.ApiVersions:
		if !st.authenticated && !st.inExchange() {
			return nil
		}
	}
	c.s.log.Debug("kafka: closing connection: a request before SASL authentication (IllegalSaslState)",
		"remote", c.remote, "api", key.Name())
	return fmt.Errorf("%w: unexpected Kafka request of type %s during SASL authentication", errSecurityClose, key.Name())
}

// authFailed is the message Kafka gives for every failed exchange: it
// says nothing of whether the user exists.
func authFailedMessage(reauth bool, mechanism string) string {
	what := "authentication"
	if reauth {
		what = "re-authentication"
	}
	return "Authentication failed during " + what + " due to invalid credentials with SASL mechanism " + mechanism
}

// step runs one client token through the exchange in progress. It
// returns the server's token and, on failure, the message for the
// client; the connection must then be closed. done reports a completed
// authentication (the state is updated).
func (c *conn) step(token []byte) (out []byte, done bool, failure string) {
	st := &c.sasl
	reauth := st.authenticated
	if st.badMechanism != "" {
		msg := st.badMechanism
		c.saslFailed(reauth, st.mechanism, msg, nil)
		return nil, false, msg
	}
	out, done, err := st.session.Step(token)
	if err != nil {
		msg := authFailedMessage(reauth, st.mechanism)
		c.saslFailed(reauth, st.mechanism, msg, err)
		return nil, false, msg
	}
	if !done {
		return out, false, ""
	}
	principal := st.session.Principal()
	if reauth && principal != c.principal {
		msg := fmt.Sprintf("Cannot change principals during re-authentication from %s: %s", kafkaPrincipalText(c.principal), kafkaPrincipalText(principal))
		c.saslFailed(reauth, st.mechanism, msg, nil)
		return nil, false, msg
	}
	c.principal = principal
	st.session = nil
	st.authenticated = true
	st.reauth = st.sawV1 && !st.raw
	st.raw, st.sawV1 = false, false
	st.expires = time.Time{}
	if c.s.o.ConnectionsMaxReauth > 0 {
		st.expires = time.Now().Add(c.s.o.ConnectionsMaxReauth)
	}
	c.s.countAuth(st.mechanism, reauth, resultSuccess)
	what := "authenticated"
	if reauth {
		what = "re-authenticated"
	}
	c.s.log.Debug("kafka: "+what, "remote", c.remote, "principal", principal, "mechanism", st.mechanism)
	return out, true, ""
}

// kafkaPrincipalText writes "User:alice" as Kafka's re-authentication
// message does: "User.alice".
func kafkaPrincipalText(p string) string { return strings.Replace(p, ":", ".", 1) }

// saslFailed counts and logs (rate-limited) a failed exchange.
func (c *conn) saslFailed(reauth bool, mechanism, msg string, err error) {
	c.s.countAuth(mechanism, reauth, resultFailure)
	attrs := []any{"remote", c.remote, "mechanism", mechanism, "reason", msg}
	if err != nil {
		attrs = append(attrs, "err", err)
	}
	c.s.rateLog(slog.LevelInfo, "sasl_failed", "kafka: failed authentication", attrs...)
	c.sasl.session = nil
}

// rawToken handles a frame read after SaslHandshake v0: a bare SASL
// token, answered with a bare size-prefixed token (an empty one when
// the mechanism has nothing to say, as Kafka's PLAIN). A failure
// closes the connection unanswered, as Kafka does without headers.
func (c *conn) rawToken(frame []byte) (pending, bool, error) {
	out, _, failure := c.step(frame)
	if failure != "" {
		return pending{}, false, fmt.Errorf("%w: %s", errSecurityClose, failure)
	}
	if out == nil {
		out = []byte{}
	}
	return pending{raw: out}, true, nil
}

// frameLimit is the largest frame the connection may send now.
func (c *conn) frameLimit() int {
	if c.s.saslOn() && !c.sasl.authenticated {
		return min(c.s.o.SocketRequestMaxBytes, saslMaxReceive)
	}
	return c.s.o.SocketRequestMaxBytes
}
