package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/passbook-log/passbook/internal/jsonfile"
	"github.com/passbook-log/passbook/internal/layout"
)

// TokenPrefix starts every token, so that one pasted where it should not
// be is recognized (and found by secret scanners).
const TokenPrefix = "pbk_"

// Tokens are the bearer tokens of the HTTP API (DIR/security/tokens.json):
// each stands for a user until revoked. Only a SHA-256 of each secret is
// stored. Shared with other processes like Users.
type Tokens struct {
	file *jsonfile.File[tokensDoc]
}

type tokensDoc struct {
	Tokens map[string]storedToken `json:"tokens"`
}

type storedToken struct {
	User    string    `json:"user"`
	SHA256  string    `json:"sha256"`
	Created time.Time `json:"created"`
}

// TokenInfo is what List tells of a token: never its secret.
type TokenInfo struct {
	Name    string    `json:"name"`
	User    string    `json:"user"`
	Created time.Time `json:"created"`
}

// OpenTokens opens the token store of the data directory dataDir.
func OpenTokens(dataDir string) (*Tokens, error) {
	f, err := jsonfile.Open[tokensDoc](filepath.Join(layout.SecurityDir(dataDir), "tokens.json"))
	if err != nil {
		return nil, err
	}
	return &Tokens{file: f}, nil
}

var tokenName = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// ValidateTokenName reports what is wrong with a token's name, if
// anything.
func ValidateTokenName(name string) error {
	if !tokenName.MatchString(name) {
		return fmt.Errorf("%w token name %q: 1 to 64 letters, digits, '.', '_' or '-'", ErrInvalid, name)
	}
	return nil
}

// Create makes a token for user and returns its secret, which is shown
// only now.
func (t *Tokens) Create(name, user string) (string, error) {
	if err := ValidateTokenName(name); err != nil {
		return "", err
	}
	if err := ValidateName(user); err != nil {
		return "", err
	}
	var raw [32]byte
	rand.Read(raw[:])
	secret := TokenPrefix + base64.RawURLEncoding.EncodeToString(raw[:])
	err := t.file.Update(func(d *tokensDoc) error {
		if _, ok := d.Tokens[name]; ok {
			return fmt.Errorf("%w: %q", ErrTokenExists, name)
		}
		if d.Tokens == nil {
			d.Tokens = map[string]storedToken{}
		}
		d.Tokens[name] = storedToken{User: user, SHA256: digest(secret), Created: time.Now().UTC().Truncate(time.Second)}
		return nil
	})
	if err != nil {
		return "", err
	}
	return secret, nil
}

// Revoke deletes a token: it authenticates no one from then on (another
// process sees it within a second).
func (t *Tokens) Revoke(name string) error {
	return t.file.Update(func(d *tokensDoc) error {
		if _, ok := d.Tokens[name]; !ok {
			return fmt.Errorf("%w %q", ErrUnknownToken, name)
		}
		delete(d.Tokens, name)
		return nil
	})
}

// List returns the tokens, sorted by name.
func (t *Tokens) List() ([]TokenInfo, error) {
	d, err := t.file.Get()
	if err != nil {
		return nil, err
	}
	out := make([]TokenInfo, 0, len(d.Tokens))
	for name, tok := range d.Tokens {
		out = append(out, TokenInfo{Name: name, User: tok.User, Created: tok.Created})
	}
	slices.SortFunc(out, func(a, b TokenInfo) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Lookup returns the user a token secret stands for, or
// ErrAuthentication.
func (t *Tokens) Lookup(secret string) (string, error) {
	if !strings.HasPrefix(secret, TokenPrefix) || len(secret) > 128 {
		return "", ErrAuthentication
	}
	d, err := t.file.Get()
	if err != nil {
		return "", err
	}
	want := digest(secret)
	user := ""
	for _, tok := range d.Tokens {
		if subtle.ConstantTimeCompare([]byte(tok.SHA256), []byte(want)) == 1 {
			user = tok.User
		}
	}
	if user == "" {
		return "", ErrAuthentication
	}
	return user, nil
}

func digest(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}
