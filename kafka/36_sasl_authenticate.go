package kafka

// SaslAuthenticate (key 36): versions 0–2.
//
// Carries the SASL tokens after SaslHandshake v1, through the user
// store's exchange (auth.Users.NewSession: PLAIN checked against the
// stored SCRAM credential, SCRAM-SHA-256 and SCRAM-SHA-512). A failure
// is SASL_AUTHENTICATION_FAILED with Kafka's message — "Authentication
// failed during authentication due to invalid credentials with SASL
// mechanism SCRAM-SHA-256", the same for an unknown user and a wrong
// password — and the connection is closed once it is written. The last
// answer of a successful exchange carries session_lifetime_ms (v1+):
// Options.ConnectionsMaxReauth, or 0 for a session that never ends. A
// re-authentication must end as the same principal. Without SASL, or
// on an authenticated connection with no exchange in progress, the
// answer is ILLEGAL_SASL_STATE; before any handshake the connection is
// closed unanswered (Kafka's IllegalSaslState during the handshake).

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.SASLAuthenticate, 0, 2, saslAuthenticate) }

func saslAuthenticate(_ context.Context, c *conn, req *kmsg.SASLAuthenticateRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	resp.SASLAuthBytes = []byte{}
	st := &c.sasl
	switch {
	case !c.s.saslOn(), st.authenticated && !st.inExchange():
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return reply{resp: resp}, nil
	case !st.inExchange() || st.raw:
		c.s.log.Debug("kafka: closing connection: SaslAuthenticate before SaslHandshake v1 (IllegalSaslState)", "remote", c.remote)
		return reply{}, fmt.Errorf("%w: unexpected Kafka request of type SaslAuthenticate during SASL handshake", errSecurityClose)
	}
	if req.Version > 0 {
		st.sawV1 = true
	}
	out, done, failure := c.step(req.SASLAuthBytes)
	if failure != "" {
		resp.ErrorCode, resp.ErrorMessage = kerr.SaslAuthenticationFailed.Code, &failure
		return reply{resp: resp, closeAfter: fmt.Errorf("%w: %s", errSecurityClose, failure)}, nil
	}
	if out != nil {
		resp.SASLAuthBytes = out
	}
	if done && !st.expires.IsZero() {
		resp.SessionLifetimeMillis = c.s.o.ConnectionsMaxReauth.Milliseconds()
	}
	return reply{resp: resp}, nil
}
