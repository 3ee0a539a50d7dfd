// Package testcerts makes throw-away certificates for tests: a CA, a
// server certificate for the loopback addresses, and a client
// certificate, written as PEM files.
package testcerts

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Set is what Write made.
type Set struct {
	CAFile, CertFile, KeyFile, ClientCertFile, ClientKeyFile string
	CAPool                                                   *x509.CertPool
	ServerCert, ClientCert                                   tls.Certificate
}

// Write makes a CA, a server certificate for 127.0.0.1, ::1 and
// localhost, and a client certificate with the common name clientCN,
// as PEM files in dir: ca.pem, server.pem, server-key.pem, client.pem,
// client-key.pem.
func Write(t testing.TB, dir, clientCN string) *Set {
	t.Helper()
	s, err := Make(dir, clientCN)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Make is Write for callers without a testing.TB (a script's helper).
func Make(dir, clientCN string) (*Set, error) {
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "passbook test CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	ca, _ := x509.ParseCertificate(caDER)
	s := &Set{
		CAFile: filepath.Join(dir, "ca.pem"), CertFile: filepath.Join(dir, "server.pem"), KeyFile: filepath.Join(dir, "server-key.pem"),
		ClientCertFile: filepath.Join(dir, "client.pem"), ClientKeyFile: filepath.Join(dir, "client-key.pem"),
		CAPool: x509.NewCertPool(),
	}
	s.CAPool.AddCert(ca)
	if err := writePEM(s.CAFile, "CERTIFICATE", caDER); err != nil {
		return nil, err
	}
	leaf := func(serial int64, cn string, usage x509.ExtKeyUsage, server bool, certFile, keyFile string) (tls.Certificate, error) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return tls.Certificate{}, err
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial),
			Subject:      pkix.Name{CommonName: cn, Organization: []string{"passbook tests"}},
			NotBefore:    now.Add(-time.Hour),
			NotAfter:     now.Add(24 * time.Hour),
			KeyUsage:     x509.KeyUsageDigitalSignature,
			ExtKeyUsage:  []x509.ExtKeyUsage{usage},
		}
		if server {
			tmpl.DNSNames = []string{"localhost"}
			tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			return tls.Certificate{}, err
		}
		keyDER, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			return tls.Certificate{}, err
		}
		if err := writePEM(certFile, "CERTIFICATE", der); err != nil {
			return tls.Certificate{}, err
		}
		if err := writePEM(keyFile, "PRIVATE KEY", keyDER); err != nil {
			return tls.Certificate{}, err
		}
		return tls.LoadX509KeyPair(certFile, keyFile)
	}
	if s.ServerCert, err = leaf(2, "localhost", x509.ExtKeyUsageServerAuth, true, s.CertFile, s.KeyFile); err != nil {
		return nil, err
	}
	if s.ClientCert, err = leaf(3, clientCN, x509.ExtKeyUsageClientAuth, false, s.ClientCertFile, s.ClientKeyFile); err != nil {
		return nil, err
	}
	return s, nil
}

func writePEM(name, kind string, der []byte) error {
	return os.WriteFile(name, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600)
}

// ClientConfig trusts the CA, and presents the client certificate if
// withCert.
func (s *Set) ClientConfig(withCert bool) *tls.Config {
	c := &tls.Config{RootCAs: s.CAPool, MinVersion: tls.VersionTLS12}
	if withCert {
		c.Certificates = []tls.Certificate{s.ClientCert}
	}
	return c
}

// ServerConfig serves the server certificate, requiring and verifying a
// client certificate if requireClientCert.
func (s *Set) ServerConfig(requireClientCert bool) *tls.Config {
	c := &tls.Config{Certificates: []tls.Certificate{s.ServerCert}, MinVersion: tls.VersionTLS12}
	if requireClientCert {
		c.ClientAuth = tls.RequireAndVerifyClientCert
		c.ClientCAs = s.CAPool
	}
	return c
}
