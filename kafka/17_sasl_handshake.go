package kafka

// SaslHandshake (key 17): versions 0–1.
//
// Names the SASL mechanism the client will authenticate with; the
// answer lists the mechanisms served (Options.SASLMechanisms). One not
// served gets UNSUPPORTED_SASL_MECHANISM and the connection is closed
// once that is written, as Kafka does. After v0 the client sends its
// tokens as raw frames (sasl.go, rawToken); after v1 in
// SaslAuthenticate requests. On an authenticated connection a
// handshake starts a re-authentication (KIP-368), if the client
// authenticated with SaslAuthenticate v1+; it must keep its mechanism.
// Without SASL, or out of order on an authenticated connection, the
// answer is ILLEGAL_SASL_STATE (Kafka's KafkaApis answer); during an
// exchange the connection is closed after that answer.

import (
	"context"
	"fmt"
	"log/slog"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.SASLHandshake, 0, 1, saslHandshake) }

func saslHandshake(_ context.Context, c *conn, req *kmsg.SASLHandshakeRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
	resp.SupportedMechanisms = slices.Clone(c.s.o.SASLMechanisms)
	if resp.SupportedMechanisms == nil {
		resp.SupportedMechanisms = []string{}
	}
	st := &c.sasl
	switch {
	case !c.s.saslOn():
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return reply{resp: resp}, nil
	case st.inExchange():
		resp.ErrorCode = kerr.IllegalSaslState.Code
		c.s.log.Debug("kafka: closing connection: SaslHandshake during SASL authentication (IllegalSaslState)", "remote", c.remote)
		return reply{resp: resp, closeAfter: fmt.Errorf("%w: SaslHandshake during SASL authentication", errSecurityClose)}, nil
	case st.authenticated && !st.reauth:
		// A client that cannot re-authenticate: an ordinary request,
		// out of place.
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return reply{resp: resp}, nil
	}
	reauth := st.authenticated
	if !slices.Contains(c.s.o.SASLMechanisms, req.Mechanism) {
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		c.s.countAuth(req.Mechanism, reauth, resultFailure)
		c.s.rateLog(slog.LevelInfo, "sasl_failed", "kafka: failed authentication: SASL mechanism not served",
			"remote", c.remote, "mechanism", req.Mechanism, "served", c.s.o.SASLMechanisms)
		return reply{resp: resp, closeAfter: fmt.Errorf("%w: unsupported SASL mechanism %q", errSecurityClose, req.Mechanism)}, nil
	}
	if reauth && req.Mechanism != st.mechanism {
		// Kafka answers the handshake and refuses the first token.
		st.badMechanism = fmt.Sprintf("SASL mechanism '%s' requested by client is not supported for re-authentication of mechanism '%s'", req.Mechanism, st.mechanism)
		return reply{resp: resp}, nil
	}
	session, err := c.s.o.Users.NewSession(req.Mechanism)
	if err != nil {
		return reply{}, fmt.Errorf("kafka: SASL session for %s: %w", req.Mechanism, err)
	}
	st.mechanism, st.session, st.raw, st.sawV1 = req.Mechanism, session, req.Version == 0, false
	return reply{resp: resp}, nil
}
