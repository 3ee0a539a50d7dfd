package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// brokersEnv is the environment variable that --brokers defaults to, and
// passwordEnv the one that gives the SASL password without a terminal.
const (
	brokersEnv  = "PASSBOOK_BROKERS"
	passwordEnv = "PASSBOOK_PASSWORD"
)

// reachTimeout bounds how long a data command waits for the first
// broker to answer before it says which addresses it could not reach.
const reachTimeout = 10 * time.Second

// brokerFlags are the flags of a data command that make it work over the
// Kafka protocol instead of on a data directory: --brokers and the
// client's security settings.
type brokerFlags struct {
	e               *env
	brokers         string
	tls             bool
	tlsCA, tlsCert  string
	tlsKey          string
	mechanism, user string
	passwordStdin   bool
	stdinIsData     bool      // produce: standard input carries records
	password        *string   // shared by withBrokers' copies, read once
	opts            []kgo.Opt // made once: the password is read once
}

// addBrokerFlags registers the Kafka client flags on cmd.
func addBrokerFlags(cmd *cobra.Command, e *env) *brokerFlags {
	b := &brokerFlags{e: e}
	cmd.Flags().StringVar(&b.brokers, "brokers", "", "work over the Kafka protocol against these brokers, HOST:PORT[,…] (passbook serve or any Kafka cluster) instead of --data; default $"+brokersEnv)
	addClientFlags(cmd, b, "--brokers")
	return b
}

// addClientFlags registers the Kafka client's security settings on cmd,
// into b; with names the flags they apply with (for the help).
func addClientFlags(cmd *cobra.Command, b *brokerFlags, with string) {
	f := cmd.Flags()
	f.BoolVar(&b.tls, "tls", false, "with "+with+": connect with TLS, trusting the system's roots (implied by --tls-ca and --tls-cert)")
	f.StringVar(&b.tlsCA, "tls-ca", "", "with "+with+": trust the brokers' certificates signed by these CAs (PEM)")
	f.StringVar(&b.tlsCert, "tls-cert", "", "with "+with+": client certificate (PEM), for brokers that ask for one")
	f.StringVar(&b.tlsKey, "tls-key", "", "with "+with+": private key (PEM) of --tls-cert")
	f.StringVar(&b.mechanism, "sasl-mechanism", "", "with "+with+": authenticate with SASL: plain, scram-sha-256 or scram-sha-512")
	f.StringVar(&b.user, "user", "", "with --sasl-mechanism: the user name")
	f.BoolVar(&b.passwordStdin, "password-stdin", false, "with --sasl-mechanism: read the password from the first line of standard input (or set $"+passwordEnv+")")
}

// withBrokers is a copy of b's settings for other brokers (mirror's two
// ends): the password, once read, is shared.
func (b *brokerFlags) withBrokers(brokers string) *brokerFlags {
	if b.password == nil {
		b.password = new(string)
	}
	c := *b
	c.brokers, c.opts = brokers, nil
	return &c
}

// hide keeps the flags out of cmd's help: for a command that only
// refuses them with a reason.
func (b *brokerFlags) hide(cmd *cobra.Command) {
	for _, name := range []string{"brokers", "tls", "tls-ca", "tls-cert", "tls-key", "sasl-mechanism", "user", "password-stdin"} {
		cmd.Flags().MarkHidden(name)
	}
}

// remote reports whether the command works over Kafka: --brokers given,
// or PASSBOOK_BROKERS set and --data not given. It refuses client
// settings without brokers, and --data with --brokers (exit 2).
func (b *brokerFlags) remote(cmd *cobra.Command) (bool, error) {
	f := cmd.Flags()
	dataSet := false
	if fl := cmd.Flag("data"); fl != nil && fl.Changed {
		dataSet = true
	}
	if !f.Changed("brokers") {
		if env := strings.TrimSpace(os.Getenv(brokersEnv)); env != "" && !dataSet {
			b.brokers = env
		}
	} else if dataSet {
		return false, usagef("--data and --brokers: give one (a data directory, or the brokers of a running server)")
	}
	if strings.TrimSpace(b.brokers) == "" {
		if f.Changed("brokers") {
			return false, usagef("--brokers: want HOST:PORT[,HOST:PORT…]")
		}
		for _, name := range []string{"tls", "tls-ca", "tls-cert", "tls-key", "sasl-mechanism", "user", "password-stdin"} {
			if f.Changed(name) {
				return false, usagef("--%s applies only with --brokers (or $%s)", name, brokersEnv)
			}
		}
		return false, nil
	}
	return true, nil
}

// seeds parses --brokers.
func (b *brokerFlags) seeds() ([]string, error) {
	var out []string
	for s := range strings.SplitSeq(b.brokers, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		host, port, err := net.SplitHostPort(s)
		if err != nil || host == "" || port == "" {
			return nil, usagef("--brokers %q: want HOST:PORT[,HOST:PORT…] (%s is not HOST:PORT)", b.brokers, s)
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return nil, usagef("--brokers %q: want HOST:PORT[,HOST:PORT…]", b.brokers)
	}
	return out, nil
}

// options checks the flags and turns them into the client's options:
// usage errors (exit 2) for settings that cannot work together, plain
// errors for files that cannot be read.
func (b *brokerFlags) options() ([]kgo.Opt, error) {
	if b.opts != nil {
		return b.opts, nil
	}
	seeds, err := b.seeds()
	if err != nil {
		return nil, err
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(seeds...),
		kgo.DialTimeout(5 * time.Second),
		kgo.RetryTimeout(30 * time.Second),
		kgo.MetadataMinAge(250 * time.Millisecond),
	}
	switch {
	case (b.tlsCert == "") != (b.tlsKey == ""):
		return nil, usagef("--tls-cert and --tls-key go together: give both or neither")
	case b.user != "" && b.mechanism == "":
		return nil, usagef("--user needs --sasl-mechanism (plain, scram-sha-256 or scram-sha-512)")
	case b.passwordStdin && b.mechanism == "":
		return nil, usagef("--password-stdin needs --sasl-mechanism (plain, scram-sha-256 or scram-sha-512)")
	}
	if b.tls || b.tlsCA != "" || b.tlsCert != "" {
		cfg := &tls.Config{MinVersion: tls.VersionTLS12}
		if b.tlsCA != "" {
			pem, err := os.ReadFile(b.tlsCA)
			if err != nil {
				return nil, fmt.Errorf("--tls-ca: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, usagef("--tls-ca %s: no PEM certificate in it", b.tlsCA)
			}
			cfg.RootCAs = pool
		}
		if b.tlsCert != "" {
			cert, err := tls.LoadX509KeyPair(b.tlsCert, b.tlsKey)
			if err != nil {
				return nil, fmt.Errorf("--tls-cert, --tls-key: %w", err)
			}
			cfg.Certificates = []tls.Certificate{cert}
		}
		opts = append(opts, kgo.DialTLSConfig(cfg))
	}
	if b.mechanism != "" {
		m, err := b.sasl()
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.SASL(m))
	}
	b.opts = opts
	return opts, nil
}

// sasl is the SASL mechanism of --sasl-mechanism, with the password from
// standard input or PASSBOOK_PASSWORD: never from a flag, which ps shows.
func (b *brokerFlags) sasl() (sasl.Mechanism, error) {
	mech := strings.ToLower(b.mechanism)
	switch mech {
	case "plain", "scram-sha-256", "scram-sha-512":
	default:
		return nil, usagef("--sasl-mechanism %q: want plain, scram-sha-256 or scram-sha-512", b.mechanism)
	}
	if b.user == "" {
		return nil, usagef("--sasl-mechanism %s needs --user NAME", mech)
	}
	var password string
	switch {
	case b.password != nil && *b.password != "":
		password = *b.password
	case b.passwordStdin && b.stdinIsData:
		return nil, usagef("--password-stdin: produce reads its records from standard input; set $%s instead (or use --file)", passwordEnv)
	case b.passwordStdin:
		p, err := readPassword(b.e.stdin)
		if err != nil {
			return nil, err
		}
		password = string(p)
		if b.password != nil {
			*b.password = password
		}
	case os.Getenv(passwordEnv) != "":
		password = os.Getenv(passwordEnv)
	default:
		return nil, usagef("--sasl-mechanism %s: give the password with --password-stdin or $%s (never as an argument: it would show in ps)", mech, passwordEnv)
	}
	switch mech {
	case "plain":
		return plain.Auth{User: b.user, Pass: password}.AsMechanism(), nil
	case "scram-sha-256":
		return scram.Auth{User: b.user, Pass: password}.AsSha256Mechanism(), nil
	}
	return scram.Auth{User: b.user, Pass: password}.AsSha512Mechanism(), nil
}

// cluster is a connection to a Kafka cluster (or passbook serve) for one
// command: the client and its admin.
type cluster struct {
	addrs string
	cl    *kgo.Client
	adm   *kadm.Client
}

// dial connects with the flags' settings and extra options, and checks
// within reachTimeout that a broker answers: an unreachable one is an
// error naming the addresses (exit 1), not a hang.
func (b *brokerFlags) dial(ctx context.Context, extra ...kgo.Opt) (*cluster, error) {
	opts, err := b.options()
	if err != nil {
		return nil, err
	}
	cl, err := kgo.NewClient(append(slices.Clip(opts), extra...)...)
	if err != nil {
		return nil, usagef("--brokers: %v", err)
	}
	pctx, cancel := context.WithTimeout(ctx, reachTimeout)
	defer cancel()
	if err := cl.Ping(pctx); err != nil {
		cl.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		switch {
		case errors.Is(err, kerr.SaslAuthenticationFailed):
			return nil, fmt.Errorf("the Kafka brokers at %s refused the login of %s: %w", b.brokers, b.user, err)
		case errors.Is(err, context.DeadlineExceeded):
			err = fmt.Errorf("no answer within %s", reachTimeout)
		}
		return nil, fmt.Errorf("cannot reach the Kafka brokers at %s: %w", b.brokers, err)
	}
	return &cluster{addrs: b.brokers, cl: cl, adm: kadm.NewClient(cl)}, nil
}

func (c *cluster) Close() { c.cl.Close() }
