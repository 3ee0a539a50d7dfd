package auth_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/passbook-log/passbook/auth"
)

func TestTokens(t *testing.T) {
	dir := t.TempDir()
	toks, err := auth.OpenTokens(dir)
	if err != nil {
		t.Fatal(err)
	}
	secret, err := toks.Create("ci", "alice")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(secret, auth.TokenPrefix) || len(secret) < 40 {
		t.Fatalf("secret %q", secret)
	}
	if user, err := toks.Lookup(secret); err != nil || user != "alice" {
		t.Fatalf("Lookup = %q, %v", user, err)
	}
	for _, bad := range []string{"", "pbk_", secret + "x", strings.ToUpper(secret), "Bearer " + secret} {
		if _, err := toks.Lookup(bad); !errors.Is(err, auth.ErrAuthentication) {
			t.Errorf("Lookup(%.20q) = %v", bad, err)
		}
	}
	if _, err := toks.Create("ci", "bob"); !errors.Is(err, auth.ErrTokenExists) {
		t.Errorf("a second token named ci: %v", err)
	}
	for _, name := range []string{"", "has space", strings.Repeat("n", 65), "a/b"} {
		if _, err := toks.Create(name, "bob"); !errors.Is(err, auth.ErrInvalid) {
			t.Errorf("token name %q: %v", name, err)
		}
	}
	list, _ := toks.List()
	if len(list) != 1 || list[0].Name != "ci" || list[0].User != "alice" || list[0].Created.IsZero() {
		t.Fatalf("List = %+v", list)
	}
	data, _ := readAll(dir)
	if strings.Contains(data, secret) || strings.Contains(data, strings.TrimPrefix(secret, auth.TokenPrefix)) {
		t.Error("the token's secret is stored in the clear")
	}
	if err := toks.Revoke("ci"); err != nil {
		t.Fatal(err)
	}
	if _, err := toks.Lookup(secret); !errors.Is(err, auth.ErrAuthentication) {
		t.Errorf("a revoked token still authenticates: %v", err)
	}
	if err := toks.Revoke("ci"); !errors.Is(err, auth.ErrUnknownToken) {
		t.Errorf("revoking twice: %v", err)
	}
}
