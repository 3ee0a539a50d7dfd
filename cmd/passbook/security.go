package main

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/passbook-log/passbook/acl"
	"github.com/passbook-log/passbook/auth"
	"github.com/passbook-log/passbook/kafka"
	"github.com/passbook-log/passbook/web"
	"github.com/spf13/pflag"
)

// securityFlags are serve's TLS, SASL and ACL settings (docs/security.md).
type securityFlags struct {
	tlsCert, tlsKey, tlsClientCA string
	sasl                         []string
	insecure                     bool
	authorize                    bool
	superUsers                   []string
	reauth                       time.Duration
	metricsAuth                  bool
}

func (s *securityFlags) register(f *pflag.FlagSet, wo *web.Options) {
	f.StringVar(&s.tlsCert, "tls-cert", "", "TLS certificate (PEM) for the Kafka and HTTP listeners; reloaded when the file changes or on SIGHUP")
	f.StringVar(&s.tlsKey, "tls-key", "", "TLS private key (PEM) of --tls-cert")
	f.StringVar(&s.tlsClientCA, "tls-client-ca", "", "require client certificates signed by these CAs (PEM); a certificate's subject CN becomes the principal User:CN")
	f.StringSliceVar(&s.sasl, "sasl", nil, "require SASL on the Kafka listener with these mechanisms: plain, scram-sha-256, scram-sha-512 (users: passbook user add); PLAIN only with TLS unless --insecure")
	f.BoolVar(&s.insecure, "insecure", false, "allow what exposes data: listening beyond loopback without TLS and authentication, SASL PLAIN without TLS (a warning is logged at each start)")
	f.BoolVar(&s.authorize, "authorize", false, "enforce ACLs (passbook acl add) on Kafka and HTTP requests: deny unless an ACL allows, except for --super-users")
	f.StringSliceVar(&s.superUsers, "super-users", nil, "principals allowed everything with --authorize, such as User:admin")
	f.DurationVar(&s.reauth, "connections-max-reauth", 0, "lifetime of a SASL session (Kafka's connections.max.reauth.ms): clients re-authenticate before it ends, else their connection is closed; 0: sessions never end")
	f.BoolVar(&s.metricsAuth, "http-metrics-auth", false, "HTTP: require credentials (and DESCRIBE on the cluster, with --authorize) for /metrics too; by default /metrics, /healthz and /readyz are open")
	f.StringSliceVar(&wo.AllowedHosts, "http-allowed-hosts", nil, "HTTP: more host names the server answers to in the Host header (beside its address, localhost and --advertise); others get 421, which stops DNS rebinding")
	f.StringSliceVar(&wo.CORSOrigins, "http-cors-origin", nil, "HTTP: origins (https://app.example) whose pages may call the API; by default no CORS headers are sent")
}

// isLoopback reports whether a listen address is reachable from this
// machine only. An empty host, 0.0.0.0 and :: are every interface.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// security is what apply made of the flags.
type security struct {
	tls      *tls.Config
	reloader *auth.CertReloader
	warnings []string
}

// apply checks the flags against the listen addresses and fills in the
// Kafka and HTTP options. Everything is checked before anything is
// served: a refusal is a usage error.
func (s *securityFlags) apply(dataDir, kafkaAddr, httpAddr string, ko *kafka.Options, wo *web.Options, log *slog.Logger) (*security, error) {
	sec := &security{}
	wo.Advertise = ko.Advertise
	if (s.tlsCert == "") != (s.tlsKey == "") {
		return nil, usagef("--tls-cert and --tls-key go together")
	}
	if s.tlsClientCA != "" && s.tlsCert == "" {
		return nil, usagef("--tls-client-ca needs --tls-cert and --tls-key: client certificates are checked in a TLS handshake")
	}
	var mechs []string
	for _, m := range s.sasl {
		mech, err := auth.ParseMechanism(m)
		if err != nil {
			return nil, usagef("--sasl: %v", err)
		}
		mechs = append(mechs, mech)
	}
	if s.reauth < 0 {
		return nil, usagef("--connections-max-reauth %v is negative", s.reauth)
	}
	if s.reauth > 0 && len(mechs) == 0 {
		return nil, usagef("--connections-max-reauth is the lifetime of a SASL session: it needs --sasl")
	}
	for _, o := range wo.CORSOrigins {
		if err := web.ValidateOrigin(o); err != nil {
			return nil, usagef("--http-cors-origin: %v", err)
		}
	}
	for _, h := range wo.AllowedHosts {
		if h == "" || strings.ContainsAny(h, "/ ") {
			return nil, usagef("--http-allowed-hosts %q: want a host name or address (any port), or * behind a proxy that checks the Host itself", h)
		}
	}
	if len(s.superUsers) > 0 && !s.authorize {
		return nil, usagef("--super-users are exempt from ACLs: they need --authorize")
	}
	for _, p := range s.superUsers {
		if kind, name, ok := strings.Cut(p, ":"); !ok || kind != "User" || name == "" || name == "*" {
			return nil, usagef("--super-users %q: want User:NAME", p)
		}
	}
	tlsOn := s.tlsCert != ""
	authn := len(mechs) > 0 || s.tlsClientCA != ""
	for _, m := range mechs {
		if m == auth.PLAIN && !tlsOn && !s.insecure {
			return nil, usagef("--sasl plain sends passwords as they are: give --tls-cert and --tls-key, or --insecure to allow it")
		}
	}
	if !isLoopback(kafkaAddr) && !(tlsOn && authn) {
		if !s.insecure {
			return nil, usagef("--kafka %s is reachable beyond this machine: give --tls-cert/--tls-key and --sasl (or --tls-client-ca) so clients are encrypted and authenticated, or --insecure to serve it open", kafkaAddr)
		}
		sec.warnings = append(sec.warnings, fmt.Sprintf("the Kafka port %s is reachable beyond this machine without TLS and authentication (--insecure): anyone who reaches it can read, write and delete every topic", kafkaAddr))
	}
	httpExposed := httpAddr != "" && !isLoopback(httpAddr)
	if httpExposed && !tlsOn {
		if !s.insecure {
			return nil, usagef("--http %s is reachable beyond this machine: give --tls-cert and --tls-key (passwords and tokens would cross the network in the clear), or --insecure", httpAddr)
		}
		sec.warnings = append(sec.warnings, fmt.Sprintf("the HTTP API %s is reachable beyond this machine without TLS (--insecure): passwords and tokens cross the network in the clear", httpAddr))
	}

	if tlsOn {
		cfg, reloader, err := auth.TLSFiles{Cert: s.tlsCert, Key: s.tlsKey, ClientCA: s.tlsClientCA, Logger: log}.Config()
		if err != nil {
			return nil, usageError{err}
		}
		sec.tls, sec.reloader = cfg, reloader
		ko.TLS = cfg
		wo.TLS = cfg
	}
	users, err := auth.OpenUsers(dataDir)
	if err != nil {
		return nil, err
	}
	tokens, err := auth.OpenTokens(dataDir)
	if err != nil {
		return nil, err
	}
	ko.Users, wo.Users, wo.Tokens = users, users, tokens
	ko.SASLMechanisms, ko.ConnectionsMaxReauth, ko.Insecure = mechs, s.reauth, s.insecure
	if s.authorize {
		store, err := acl.OpenStore(dataDir)
		if err != nil {
			return nil, err
		}
		a := acl.NewAuthorizer(store, s.superUsers, log)
		ko.Authorizer, wo.Authorizer = a, a
		all := acl.Filter{ResourceType: acl.ResourceAny, Pattern: acl.PatternAny, Operation: acl.OpAny, Permission: acl.PermissionAny}
		if bs, err := store.List(all); err != nil {
			return nil, err
		} else if len(bs) == 0 && len(s.superUsers) == 0 {
			sec.warnings = append(sec.warnings, "--authorize with no ACLs and no --super-users: every request will be denied (add ACLs with passbook acl add)")
		}
	}
	// The HTTP API asks for the Kafka port's users when the Kafka port
	// does, when ACLs are on, and always beyond loopback.
	wo.RequireAuth = len(mechs) > 0 || s.authorize || httpExposed
	wo.MetricsAuth = s.metricsAuth
	if s.metricsAuth && !wo.RequireAuth {
		return nil, usagef("--http-metrics-auth needs authentication on: --sasl, --authorize or a non-loopback --http")
	}
	if len(mechs) > 0 || wo.RequireAuth {
		if list, err := users.List(); err != nil {
			return nil, err
		} else if len(list) == 0 {
			sec.warnings = append(sec.warnings, "authentication is required and there are no users yet: add one with passbook user add NAME --password-stdin")
		}
	}
	return sec, nil
}

// start logs the warnings and, with TLS, reloads the certificate on
// SIGHUP until stop is called.
func (sec *security) start(log *slog.Logger) (stop func()) {
	for _, w := range sec.warnings {
		log.Warn("security: " + w)
	}
	if sec.reloader == nil {
		return func() {}
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-hup:
				if err := sec.reloader.Reload(); err != nil {
					log.Error("tls: SIGHUP: the certificate did not load; the previous one stays in use", "err", err)
				} else {
					log.Info("tls: SIGHUP: certificate reloaded")
				}
			case <-done:
				return
			}
		}
	}()
	return func() {
		signal.Stop(hup)
		close(done)
	}
}
