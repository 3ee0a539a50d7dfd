package auth_test

import (
	"crypto/tls"
	"net"
	"os"
	"testing"
	"time"

	"github.com/passbook-log/passbook/auth"
	"github.com/passbook-log/passbook/internal/testcerts"
)

// handshake connects a TLS client to a server using cfg and returns
// what each side saw.
func handshake(t *testing.T, cfg, client *tls.Config) (tls.ConnectionState, error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	states := make(chan tls.ConnectionState, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(states)
			return
		}
		defer c.Close()
		tc := tls.Server(c, cfg)
		tc.SetDeadline(time.Now().Add(10 * time.Second))
		if tc.Handshake() != nil {
			close(states)
			return
		}
		states <- tc.ConnectionState()
	}()
	client = client.Clone()
	client.ServerName = "localhost"
	c, err := tls.Dial("tcp", ln.Addr().String(), client)
	if err == nil {
		// TLS 1.3 reports a refused client certificate on the first read.
		c.SetDeadline(time.Now().Add(10 * time.Second))
		_, err = c.Read(make([]byte, 1))
		if err != nil && err.Error() == "EOF" {
			err = nil
		}
		c.Close()
	}
	st, ok := <-states
	if !ok && err == nil {
		err = os.ErrClosed
	}
	return st, err
}

func TestTLS_ClientCertificatePrincipal(t *testing.T) {
	certs := testcerts.Write(t, t.TempDir(), "alice")
	cfg, _, err := auth.TLSFiles{Cert: certs.CertFile, Key: certs.KeyFile, ClientCA: certs.CAFile}.Config()
	if err != nil {
		t.Fatal(err)
	}
	st, err := handshake(t, cfg, certs.ClientConfig(true))
	if err != nil {
		t.Fatal(err)
	}
	if p := auth.PrincipalOf(st); p != "User:alice" {
		t.Errorf("principal %q, want User:alice", p)
	}
	if _, err := handshake(t, cfg, certs.ClientConfig(false)); err == nil {
		t.Error("a client without a certificate was let in with --tls-client-ca")
	}
	old := &tls.Config{RootCAs: certs.CAPool, MaxVersion: tls.VersionTLS11, Certificates: []tls.Certificate{certs.ClientCert}}
	if _, err := handshake(t, cfg, old); err == nil {
		t.Error("TLS 1.1 was accepted")
	}
}

// A certificate replaced on disk is served from the next handshake a
// second later, without a restart; a broken replacement keeps the old one.
func TestTLS_Reload(t *testing.T) {
	dir := t.TempDir()
	first := testcerts.Write(t, dir, "alice")
	cfg, reloader, err := auth.TLSFiles{Cert: first.CertFile, Key: first.KeyFile}.Config()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := handshake(t, cfg, first.ClientConfig(false)); err != nil {
		t.Fatal(err)
	}
	second := testcerts.Write(t, dir, "alice") // a new CA and server certificate, same files
	if err := reloader.Reload(); err != nil {
		t.Fatal(err)
	}
	if _, err := handshake(t, cfg, second.ClientConfig(false)); err != nil {
		t.Fatalf("after Reload, the new certificate is not served: %v", err)
	}
	if err := os.WriteFile(second.CertFile, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := reloader.Reload(); err == nil {
		t.Fatal("Reload of a broken certificate succeeded")
	}
	if _, err := handshake(t, cfg, second.ClientConfig(false)); err != nil {
		t.Fatalf("a broken replacement took the good certificate out of service: %v", err)
	}
	if _, _, err := (auth.TLSFiles{Cert: second.CertFile, Key: second.KeyFile}).Config(); err == nil {
		t.Fatal("Config of a broken certificate succeeded")
	}
}
