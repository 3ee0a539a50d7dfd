package auth

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"fmt"
	"hash"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/passbook-log/passbook/internal/jsonfile"
	"github.com/passbook-log/passbook/internal/layout"
)

// Iteration bounds of a SCRAM credential: Kafka's.
const (
	DefaultIterations = 4096
	MinIterations     = 4096
	MaxIterations     = 16384
)

// MaxPasswordBytes bounds a password.
const MaxPasswordBytes = 1024

// Users is the SCRAM credential store of a data directory
// (DIR/security/users.json). It is safe for concurrent use, and shared
// with other processes: `passbook user add` while `passbook serve` runs
// takes effect within a second.
type Users struct {
	file *jsonfile.File[usersDoc]

	// secret keys the fake credentials of unknown users (see fake).
	secret [32]byte
	// verifying bounds the password derivations running at once: each
	// costs milliseconds of CPU, and clients choose how many to ask for.
	verifying chan struct{}
	// verified remembers passwords checked lately (by a hash of user,
	// password and salt), so that HTTP Basic does not derive the key on
	// every request.
	mu       sync.Mutex
	verified map[[32]byte]time.Time
}

type usersDoc struct {
	Users map[string]map[string]Credential `json:"users"`
}

// Credential is a stored SCRAM credential (RFC 5802): the salt, the
// iteration count and the two keys derived from the salted password.
type Credential struct {
	Salt       []byte `json:"salt"`
	Iterations int    `json:"iterations"`
	StoredKey  []byte `json:"stored_key"`
	ServerKey  []byte `json:"server_key"`
}

// UserInfo is what List tells of a user: never a key.
type UserInfo struct {
	Name        string           `json:"name"`
	Credentials []CredentialInfo `json:"credentials"`
}

// CredentialInfo is one mechanism's credential of a user.
type CredentialInfo struct {
	Mechanism  string `json:"mechanism"`
	Iterations int    `json:"iterations"`
}

// OpenUsers opens the credential store of the data directory dataDir.
// The store is created by its first change.
func OpenUsers(dataDir string) (*Users, error) {
	f, err := jsonfile.Open[usersDoc](filepath.Join(layout.SecurityDir(dataDir), "users.json"))
	if err != nil {
		return nil, err
	}
	u := &Users{file: f, verifying: make(chan struct{}, max(1, runtime.GOMAXPROCS(0))), verified: map[[32]byte]time.Time{}}
	rand.Read(u.secret[:])
	return u, nil
}

// Path is the store's file.
func (u *Users) Path() string { return u.file.Path() }

// ValidateName reports what is wrong with a user name, if anything.
func ValidateName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w user name: empty", ErrInvalid)
	case len(name) > 255:
		return fmt.Errorf("%w user name: %d bytes, more than 255", ErrInvalid, len(name))
	case !utf8.ValidString(name):
		return fmt.Errorf("%w user name %q: not UTF-8", ErrInvalid, name)
	}
	for _, r := range name {
		if unicode.IsControl(r) || unicode.IsSpace(r) {
			return fmt.Errorf("%w user name %q: no spaces or control characters", ErrInvalid, name)
		}
	}
	return nil
}

func validIterations(n int) error {
	if n < MinIterations || n > MaxIterations {
		return fmt.Errorf("%w iteration count %d: want %d to %d", ErrInvalid, n, MinIterations, MaxIterations)
	}
	return nil
}

func hashOf(mechanism string) (func() hash.Hash, error) {
	switch mechanism {
	case SCRAMSHA256:
		return sha256.New, nil
	case SCRAMSHA512:
		return sha512.New, nil
	}
	return nil, fmt.Errorf("%w %q for a credential (want %s or %s)", ErrUnknownMechanism, mechanism, SCRAMSHA256, SCRAMSHA512)
}

// Set adds or replaces the user's credential for a SCRAM mechanism,
// derived from password with a fresh random salt. iterations 0 means
// DefaultIterations.
func (u *Users) Set(name, mechanism string, password []byte, iterations int) error {
	if iterations == 0 {
		iterations = DefaultIterations
	}
	h, err := hashOf(mechanism)
	if err != nil {
		return err
	}
	if err := validIterations(iterations); err != nil {
		return err
	}
	switch {
	case len(password) == 0:
		return fmt.Errorf("%w password: empty", ErrInvalid)
	case len(password) > MaxPasswordBytes:
		return fmt.Errorf("%w password: more than %d bytes", ErrInvalid, MaxPasswordBytes)
	}
	salt := make([]byte, h().Size())
	rand.Read(salt)
	salted, err := pbkdf2.Key(h, string(password), salt, iterations, h().Size())
	if err != nil {
		return err
	}
	return u.SetSalted(name, mechanism, salt, salted, iterations)
}

// SetSalted adds or replaces the user's credential for a SCRAM
// mechanism from a salted password (what AlterUserScramCredentials
// sends: the client derived it, the password never left it).
func (u *Users) SetSalted(name, mechanism string, salt, saltedPassword []byte, iterations int) error {
	if err := ValidateName(name); err != nil {
		return err
	}
	h, err := hashOf(mechanism)
	if err != nil {
		return err
	}
	if err := validIterations(iterations); err != nil {
		return err
	}
	if len(salt) == 0 || len(saltedPassword) == 0 {
		return fmt.Errorf("%w credential: empty salt or salted password", ErrInvalid)
	}
	stored, server := deriveKeys(h, saltedPassword)
	c := Credential{Salt: salt, Iterations: iterations, StoredKey: stored, ServerKey: server}
	err = u.file.Update(func(d *usersDoc) error {
		if d.Users == nil {
			d.Users = map[string]map[string]Credential{}
		}
		if d.Users[name] == nil {
			d.Users[name] = map[string]Credential{}
		}
		d.Users[name][mechanism] = c
		return nil
	})
	u.forget()
	return err
}

// deriveKeys computes StoredKey = H(HMAC(salted, "Client Key")) and
// ServerKey = HMAC(salted, "Server Key").
func deriveKeys(h func() hash.Hash, salted []byte) (stored, server []byte) {
	mac := hmac.New(h, salted)
	mac.Write([]byte("Client Key"))
	ck := mac.Sum(nil)
	sum := h()
	sum.Write(ck)
	stored = sum.Sum(nil)
	mac = hmac.New(h, salted)
	mac.Write([]byte("Server Key"))
	return stored, mac.Sum(nil)
}

// Delete removes the user's credential for mechanism, or all of them
// for mechanism "". ErrUnknownUser if there is none.
func (u *Users) Delete(name, mechanism string) error {
	if mechanism != "" {
		if _, err := hashOf(mechanism); err != nil {
			return err
		}
	}
	err := u.file.Update(func(d *usersDoc) error {
		creds, ok := d.Users[name]
		if !ok {
			return fmt.Errorf("%w %q", ErrUnknownUser, name)
		}
		if mechanism == "" {
			delete(d.Users, name)
			return nil
		}
		if _, ok := creds[mechanism]; !ok {
			return fmt.Errorf("%w %q with a %s credential", ErrUnknownUser, name, mechanism)
		}
		delete(creds, mechanism)
		if len(creds) == 0 {
			delete(d.Users, name)
		}
		return nil
	})
	u.forget()
	return err
}

// List returns the users and their mechanisms, sorted by name.
func (u *Users) List() ([]UserInfo, error) {
	d, err := u.file.Get()
	if err != nil {
		return nil, err
	}
	out := make([]UserInfo, 0, len(d.Users))
	for name, creds := range d.Users {
		info := UserInfo{Name: name}
		for _, m := range SCRAMMechanisms {
			if c, ok := creds[m]; ok {
				info.Credentials = append(info.Credentials, CredentialInfo{Mechanism: m, Iterations: c.Iterations})
			}
		}
		out = append(out, info)
	}
	slices.SortFunc(out, func(a, b UserInfo) int {
		if a.Name < b.Name {
			return -1
		}
		if a.Name > b.Name {
			return 1
		}
		return 0
	})
	return out, nil
}

// Exists reports whether name has a credential.
func (u *Users) Exists(name string) (bool, error) {
	d, err := u.file.Get()
	if err != nil {
		return false, err
	}
	_, ok := d.Users[name]
	return ok, nil
}

// credential returns the user's stored credential for mechanism.
func (u *Users) credential(name, mechanism string) (Credential, bool, error) {
	d, err := u.file.Get()
	if err != nil {
		return Credential{}, false, err
	}
	c, ok := d.Users[name][mechanism]
	return c, ok, nil
}

// fake is the credential shown for an unknown user: a salt derived from
// the name (the same on every attempt, as a real user's is) and keys no
// password matches, so that the exchange fails at the proof exactly as
// for a wrong password.
func (u *Users) fake(name, mechanism string) Credential {
	h, _ := hashOf(mechanism)
	mac := hmac.New(sha256.New, u.secret[:])
	mac.Write([]byte(mechanism + "\x00" + name))
	seed := mac.Sum(nil)
	salt := make([]byte, h().Size())
	copy(salt, seed)
	if len(salt) > len(seed) {
		copy(salt[len(seed):], seed)
	}
	stored, server := deriveKeys(h, append(seed, "fake"...))
	return Credential{Salt: salt, Iterations: DefaultIterations, StoredKey: stored, ServerKey: server}
}

// Verify checks a password (SASL PLAIN, HTTP Basic) against the user's
// stored SCRAM credential (SCRAM-SHA-512's if the user has both). It
// returns nil or ErrAuthentication, after the same work for an unknown
// user as for a wrong password.
func (u *Users) Verify(name string, password []byte) error {
	var c Credential
	mechanism, found := "", false
	for _, m := range []string{SCRAMSHA512, SCRAMSHA256} {
		cred, ok, err := u.credential(name, m)
		if err != nil {
			return err
		}
		if ok {
			c, mechanism, found = cred, m, true
			break
		}
	}
	if !found {
		mechanism = SCRAMSHA512
		c = u.fake(name, mechanism)
	}
	key := u.cacheKey(name, password, c)
	if found && u.recentlyVerified(key) {
		return nil
	}
	h, _ := hashOf(mechanism)
	u.verifying <- struct{}{}
	salted, err := pbkdf2.Key(h, string(password), c.Salt, c.Iterations, h().Size())
	<-u.verifying
	if err != nil {
		return ErrAuthentication
	}
	stored, _ := deriveKeys(h, salted)
	if subtle.ConstantTimeCompare(stored, c.StoredKey) != 1 || !found {
		return ErrAuthentication
	}
	u.remember(key)
	return nil
}

// verifiedFor is how long a checked password is remembered, and
// maxVerified how many are.
const (
	verifiedFor = time.Minute
	maxVerified = 1024
)

func (u *Users) cacheKey(name string, password []byte, c Credential) [32]byte {
	mac := hmac.New(sha256.New, u.secret[:])
	mac.Write([]byte(name))
	mac.Write([]byte{0})
	mac.Write(password)
	mac.Write([]byte{0})
	mac.Write(c.Salt)
	mac.Write(c.StoredKey)
	var k [32]byte
	copy(k[:], mac.Sum(nil))
	return k
}

func (u *Users) recentlyVerified(k [32]byte) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	at, ok := u.verified[k]
	return ok && time.Since(at) < verifiedFor
}

func (u *Users) remember(k [32]byte) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.verified) >= maxVerified {
		for old, at := range u.verified {
			if time.Since(at) >= verifiedFor || len(u.verified) >= maxVerified {
				delete(u.verified, old)
			}
		}
	}
	u.verified[k] = time.Now()
}

// forget drops the remembered passwords after a change in this process
// (another process's change changes the salt or keys, and so the key).
func (u *Users) forget() {
	u.mu.Lock()
	clear(u.verified)
	u.mu.Unlock()
}

func pbkdf2Key(h func() hash.Hash, password, salt []byte, iterations int) ([]byte, error) {
	return pbkdf2.Key(h, string(password), salt, iterations, h().Size())
}
