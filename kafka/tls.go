package kafka

// TLS on the Kafka port (Options.TLS), as a Kafka SSL or SASL_SSL
// listener. Serve wraps each accepted connection in tls.Server before
// it is counted against max.connections and max.connections.per.ip, so
// a flood of connections that never finish their handshake is bounded
// like any other; the handshake itself runs on the connection's
// goroutine and must finish within the request timeout. A failed
// handshake is counted (passbook_kafka_tls_handshake_failures_total)
// and logged, at most once per 10 seconds. With verified client
// certificates the connection's principal is "User:CN" of its
// certificate until SASL, if on, names another.

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"time"

	"github.com/passbook-log/passbook/auth"
)

// handshake runs the TLS handshake of c and sets its principal. It
// reports false if the connection is to be closed.
func (c *conn) handshake(log *slog.Logger, tc *tls.Conn) bool {
	ctx, cancel := context.WithTimeout(c.s.polls, c.s.o.RequestTimeout)
	defer cancel()
	err := tc.HandshakeContext(ctx)
	if err != nil {
		if c.stopping.Load() || c.s.polls.Err() != nil || errors.Is(err, net.ErrClosed) {
			log.Debug("kafka: TLS handshake cut short", "err", err)
			return false
		}
		c.s.sec.tlsFailed.Add(1)
		c.s.rateLog(slog.LevelInfo, "tls_handshake", "kafka: failed TLS handshake", "remote", c.remote, "err", err)
		return false
	}
	c.nc.SetDeadline(time.Time{})
	c.active()
	if p := auth.PrincipalOf(tc.ConnectionState()); p != "" {
		c.principal = p
	}
	log.Debug("kafka: TLS handshake done", "principal", c.principal, "version", tls.VersionName(tc.ConnectionState().Version))
	return true
}
