// Package auth owns who a client is: the users of a data directory and
// their SCRAM credentials (DIR/security/users.json), the server side of
// the SASL mechanisms Kafka clients speak (PLAIN, SCRAM-SHA-256,
// SCRAM-SHA-512), bearer tokens for the HTTP API
// (DIR/security/tokens.json), and TLS configuration with certificates
// reloaded from their files. What a principal may then do is package
// acl's.
//
// Only salted SCRAM credentials are stored, never a password: PLAIN and
// HTTP Basic passwords are checked by deriving the SCRAM key from them.
// An unknown user and a wrong password fail alike, after the same work,
// so that neither the answer nor its timing tells whether a user exists.
package auth

import (
	"errors"
	"fmt"
	"strings"
)

// Mechanism names, as Kafka spells them.
const (
	PLAIN       = "PLAIN"
	SCRAMSHA256 = "SCRAM-SHA-256"
	SCRAMSHA512 = "SCRAM-SHA-512"
)

// Mechanisms are the SASL mechanisms served, in the order listed to
// clients.
var Mechanisms = []string{SCRAMSHA512, SCRAMSHA256, PLAIN}

// SCRAMMechanisms are the mechanisms a user has credentials for.
var SCRAMMechanisms = []string{SCRAMSHA256, SCRAMSHA512}

// ParseMechanism accepts a mechanism name in any case ("plain",
// "scram-sha-512") and returns Kafka's spelling.
func ParseMechanism(s string) (string, error) {
	for _, m := range Mechanisms {
		if strings.EqualFold(s, m) {
			return m, nil
		}
	}
	return "", fmt.Errorf("%w %q (want plain, scram-sha-256 or scram-sha-512)", ErrUnknownMechanism, s)
}

// Anonymous is the principal of a client that did not authenticate.
const Anonymous = "User:ANONYMOUS"

// User is the principal of a user name: "User:name", as in Kafka.
func User(name string) string { return "User:" + name }

var (
	// ErrAuthentication is every failed authentication: an unknown user,
	// a wrong password, a bad SCRAM proof, an unknown token alike.
	ErrAuthentication = errors.New("authentication failed: invalid credentials")
	// ErrMalformed is a SASL message that does not parse.
	ErrMalformed = errors.New("malformed SASL message")
	// ErrUnknownMechanism is a mechanism that is not served.
	ErrUnknownMechanism = errors.New("unknown SASL mechanism")
	// ErrUnknownUser is a change to a user with no credential.
	ErrUnknownUser = errors.New("no such user")
	// ErrUnknownToken is a change to a token that does not exist.
	ErrUnknownToken = errors.New("no such token")
	// ErrTokenExists is a new token with the name of another.
	ErrTokenExists = errors.New("a token of that name exists")
	// ErrInvalid is a name, password or iteration count refused.
	ErrInvalid = errors.New("invalid")
)
