package auth

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
)

// TLSFiles name the PEM files of a server's TLS configuration.
type TLSFiles struct {
	Cert, Key string
	// ClientCA, if set, makes client certificates required and verified
	// against the CAs in it.
	ClientCA string
	// Logger receives a line when a changed file fails to load (the
	// previous certificate stays in use). Default: discard.
	Logger *slog.Logger
}

// CertReloader holds the certificate and client CAs in use and loads
// them again when their files change (checked at most once a second, at
// a handshake) or on Reload.
type CertReloader struct {
	files TLSFiles
	log   *slog.Logger

	mu      sync.Mutex
	cert    *tls.Certificate
	pool    *x509.CertPool
	stamps  [3]time.Time
	checked time.Time
}

// Config returns a server TLS configuration (TLS 1.2 or later) whose
// certificate, and client CAs, follow the files.
func (f TLSFiles) Config() (*tls.Config, *CertReloader, error) {
	switch {
	case f.Cert == "" || f.Key == "":
		return nil, nil, errors.New("TLS needs both a certificate and a key file")
	}
	r := &CertReloader{files: f, log: f.Logger}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	if err := r.Reload(); err != nil {
		return nil, nil, err
	}
	base := &tls.Config{MinVersion: tls.VersionTLS12}
	cfg := base.Clone()
	cfg.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) {
		r.maybeReload()
		r.mu.Lock()
		c := base.Clone()
		c.Certificates = []tls.Certificate{*r.cert}
		if r.pool != nil {
			c.ClientAuth = tls.RequireAndVerifyClientCert
			c.ClientCAs = r.pool
		}
		r.mu.Unlock()
		return c, nil
	}
	// For code that reads the configuration rather than handshaking.
	if f.ClientCA != "" {
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
		cfg.ClientCAs = r.pool
	}
	cfg.Certificates = []tls.Certificate{*r.cert}
	return cfg, r, nil
}

// Reload loads the files now. On failure the certificate in use stays.
func (r *CertReloader) Reload() error {
	cert, err := tls.LoadX509KeyPair(r.files.Cert, r.files.Key)
	if err != nil {
		return fmt.Errorf("TLS certificate %s, key %s: %w", r.files.Cert, r.files.Key, err)
	}
	var pool *x509.CertPool
	if r.files.ClientCA != "" {
		pem, err := os.ReadFile(r.files.ClientCA)
		if err != nil {
			return fmt.Errorf("TLS client CA: %w", err)
		}
		pool = x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return fmt.Errorf("TLS client CA %s: no PEM certificate in it", r.files.ClientCA)
		}
	}
	r.mu.Lock()
	r.cert, r.pool = &cert, pool
	r.stamps = r.stampsNow()
	r.checked = time.Now()
	r.mu.Unlock()
	return nil
}

func (r *CertReloader) stampsNow() [3]time.Time {
	var s [3]time.Time
	for i, name := range []string{r.files.Cert, r.files.Key, r.files.ClientCA} {
		if name == "" {
			continue
		}
		if info, err := os.Stat(name); err == nil {
			s[i] = info.ModTime()
		}
	}
	return s
}

func (r *CertReloader) maybeReload() {
	r.mu.Lock()
	if time.Since(r.checked) < time.Second {
		r.mu.Unlock()
		return
	}
	r.checked = time.Now()
	changed := r.stampsNow() != r.stamps
	r.mu.Unlock()
	if !changed {
		return
	}
	if err := r.Reload(); err != nil {
		r.log.Warn("tls: a changed certificate file did not load; the previous certificate stays in use", "err", err)
		r.mu.Lock()
		r.stamps = r.stampsNow() // do not retry every second until it changes again
		r.mu.Unlock()
		return
	}
	r.log.Info("tls: certificate reloaded", "cert", r.files.Cert)
}

// PrincipalOf is the principal of a connection's verified client
// certificate: "User:" and its subject's common name (or the whole
// subject when it has none), or "" without one.
func PrincipalOf(cs tls.ConnectionState) string {
	if len(cs.VerifiedChains) == 0 || len(cs.PeerCertificates) == 0 {
		return ""
	}
	subj := cs.PeerCertificates[0].Subject
	if subj.CommonName != "" {
		return User(subj.CommonName)
	}
	return User(subj.String())
}
