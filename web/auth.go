package web

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/passbook-log/passbook/auth"
	"github.com/prometheus/client_golang/prometheus"
)

// Authentication (Options.RequireAuth): every /api request but login,
// logout, whoami and openapi.json carries credentials of the data
// directory's users, in one of three ways:
//
//   - HTTP Basic: Authorization: Basic base64(user:password), checked by
//     auth.Users.Verify against the user's SCRAM credential;
//   - a bearer token: Authorization: Bearer pbk_… (passbook token
//     create), checked by auth.Tokens.Lookup; revoked, it is refused at
//     once;
//   - the dashboard's session cookie, set by POST /api/login.
//
// No credentials, or wrong ones, are answered 401 unauthorized. The
// answer carries WWW-Authenticate: Basic realm="passbook" (which makes a
// browser ask for a password) only when the request is not a script's
// fetch from a page: requests with Sec-Fetch-Mode cors or same-origin (the
// dashboard's fetch() and EventSource) or with X-Requested-With get no
// challenge, so the dashboard shows its own login form rather than the
// browser's pop-up. curl, scripts and a URL typed into the address bar
// get the challenge.
//
// Credentials given when RequireAuth is off are still checked (wrong
// ones are 401): the principal is then the user's, for the ACLs; without
// credentials it is User:ANONYMOUS.
//
// /healthz and /readyz are always open; /metrics is open unless
// Options.MetricsAuth (then credentials and DESCRIBE on the cluster).
// The dashboard's files (/, /app.js, …) are open: they hold no data.

// sessionCookie is the dashboard's session cookie.
const sessionCookie = "passbook_session"

const (
	// maxSessions bounds the sessions kept; a login past it ends the
	// oldest.
	maxSessions = 10_000
	// sessionLifetime is how long a session lasts from its login.
	sessionLifetime = 12 * time.Hour
	// userCheckInterval is how often a session checks that its user
	// still exists (a deleted user's sessions end).
	userCheckInterval = time.Second
)

// How a request authenticated (the metric's label, whoami's "method").
const (
	authBasic   = "basic"
	authBearer  = "bearer"
	authSession = "session"
	authLogin   = "login"
)

// identity is who made a request.
type identity struct {
	user   string // "" for anonymous
	method string // authBasic, authBearer, authSession; "" for anonymous
}

func (id identity) principal() string {
	if id.user == "" {
		return auth.Anonymous
	}
	return auth.User(id.user)
}

type identityKey struct{}

// identityOf is who made r (anonymous if nobody authenticated).
func identityOf(r *http.Request) identity {
	id, _ := r.Context().Value(identityKey{}).(identity)
	return id
}

type authn struct {
	s        *Server
	failures *prometheus.CounterVec // method
	denials  *prometheus.CounterVec // operation, resource type

	mu struct {
		sync.Mutex
		sessions map[[32]byte]*session // by SHA-256 of the cookie's id
		order    [][32]byte            // the sessions' keys, oldest first (some ended already)
	}
}

type session struct {
	user    string
	created time.Time
	checked time.Time // when the user was last seen to exist
}

func newAuthn(s *Server) *authn {
	a := &authn{s: s}
	a.mu.sessions = map[[32]byte]*session{}
	a.failures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "passbook_http_auth_failures_total",
		Help: "HTTP requests refused 401 for missing or wrong credentials, by method: basic, bearer, session (an unknown or expired cookie), login (a failed POST /api/login), none (no credentials where they are required).",
	}, []string{"method"})
	for _, m := range []string{authBasic, authBearer, authSession, authLogin, "none"} {
		a.failures.WithLabelValues(m)
	}
	a.denials = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "passbook_http_authorization_denied_total",
		Help: "HTTP requests refused 403 forbidden by the ACLs, by operation and resource type (lists filtered by DESCRIBE are not counted).",
	}, []string{"operation", "resource_type"})
	s.reg.MustRegister(a.failures, a.denials)
	return a
}

// openPath: reached without credentials whatever the options.
func (a *authn) openPath(r *http.Request) bool {
	switch p := r.URL.Path; {
	case p == "/healthz", p == "/readyz":
		return true
	case p == "/metrics":
		return !a.s.o.MetricsAuth
	case p == "/api/login", p == "/api/logout", p == "/api/whoami", p == "/api/openapi.json":
		return true
	case strings.HasPrefix(p, "/api/") || p == "/api":
		return false
	}
	return true // the dashboard's files
}

// authenticate finds who made r. It answers 401 itself, and then
// reports false.
func (a *authn) authenticate(w http.ResponseWriter, r *http.Request) (*http.Request, bool) {
	id, method, err := a.credentials(r)
	open := a.openPath(r)
	if err != nil && open {
		// Wrong credentials (a stale cookie) on an open page: nobody.
		id, err = identity{}, nil
	}
	if err == nil && id.user == "" && a.s.o.RequireAuth && !open {
		method, err = "none", errors.New("this server requires credentials: HTTP Basic (user and password), a bearer token (passbook token create) or the dashboard's login")
	}
	if err != nil {
		a.failures.WithLabelValues(method).Inc()
		a.s.log.Debug("http: authentication failed", "method", method, "path", r.URL.Path, "remote", r.RemoteAddr, "err", err)
		if challenge(r) {
			w.Header().Set("WWW-Authenticate", `Basic realm="passbook", charset="UTF-8"`)
		}
		a.s.writeError(w, r, errorf(http.StatusUnauthorized, CodeUnauthorized, "%s", err))
		return r, false
	}
	return r.WithContext(context.WithValue(r.Context(), identityKey{}, id)), true
}

// challenge: answer 401 with WWW-Authenticate (a browser's password
// pop-up) — not for a page's own fetches.
func challenge(r *http.Request) bool {
	if r.Header.Get("X-Requested-With") != "" {
		return false
	}
	switch r.Header.Get("Sec-Fetch-Mode") {
	case "cors", "same-origin":
		return false
	}
	return true
}

// credentials checks what r carries: an identity (empty when it carries
// nothing), or the method tried and why it failed.
func (a *authn) credentials(r *http.Request) (identity, string, error) {
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, rest, _ := strings.Cut(h, " ")
		rest = strings.TrimSpace(rest)
		switch {
		case strings.EqualFold(scheme, "Basic"):
			user, pass, ok := r.BasicAuth()
			if !ok {
				return identity{}, authBasic, errors.New("the Authorization header is not Basic base64(user:password)")
			}
			if err := a.verify(user, pass); err != nil {
				return identity{}, authBasic, err
			}
			return identity{user: user, method: authBasic}, authBasic, nil
		case strings.EqualFold(scheme, "Bearer"):
			if a.s.o.Tokens == nil {
				return identity{}, authBearer, errors.New("this server takes no bearer tokens")
			}
			user, err := a.s.o.Tokens.Lookup(rest)
			if err != nil {
				if errors.Is(err, auth.ErrAuthentication) {
					return identity{}, authBearer, errors.New("unknown or revoked token")
				}
				return identity{}, authBearer, err
			}
			if !a.userExists(user) {
				// A token stands for a user: deleting the user ends it too.
				return identity{}, authBearer, errors.New("the token's user no longer exists")
			}
			return identity{user: user, method: authBearer}, authBearer, nil
		default:
			return identity{}, authBasic, errors.New("the Authorization header's scheme is not Basic or Bearer")
		}
	}
	if c, err := r.Cookie(sessionCookie); err == nil {
		user, err := a.session(c.Value)
		if err != nil {
			return identity{}, authSession, err
		}
		return identity{user: user, method: authSession}, authSession, nil
	}
	return identity{}, "", nil
}

// verify checks a user's password: the same error for an unknown user
// and a wrong password (auth.Users.Verify does the same work for both,
// and bounds the checks running at once).
func (a *authn) verify(user, password string) error {
	if a.s.o.Users == nil {
		return errors.New("this server has no users")
	}
	if err := a.s.o.Users.Verify(user, []byte(password)); err != nil {
		if errors.Is(err, auth.ErrAuthentication) {
			return errors.New("invalid user name or password")
		}
		return err
	}
	return nil
}

// userExists: the user still has a credential.
func (a *authn) userExists(name string) bool {
	if a.s.o.Users == nil {
		return false
	}
	ok, err := a.s.o.Users.Exists(name)
	return err == nil && ok
}

// newSession starts a session for user; the cookie's value is returned.
func (a *authn) newSession(user string) (string, error) {
	var id [32]byte
	if _, err := rand.Read(id[:]); err != nil {
		return "", err
	}
	v := base64.RawURLEncoding.EncodeToString(id[:])
	now := time.Now()
	k := sha256.Sum256([]byte(v))
	a.mu.Lock()
	defer a.mu.Unlock()
	// The oldest first: expired ones, then past the limit.
	for len(a.mu.order) > 0 {
		old := a.mu.order[0]
		s, ok := a.mu.sessions[old]
		if ok && now.Sub(s.created) < sessionLifetime && len(a.mu.sessions) < maxSessions {
			break
		}
		delete(a.mu.sessions, old)
		a.mu.order = a.mu.order[1:]
	}
	a.mu.sessions[k] = &session{user: user, created: now, checked: now}
	a.mu.order = append(a.mu.order, k)
	if len(a.mu.order) > 2*maxSessions { // many ended by logout: keep the live ones only
		live := a.mu.order[:0]
		for _, k := range a.mu.order {
			if _, ok := a.mu.sessions[k]; ok {
				live = append(live, k)
			}
		}
		a.mu.order = live
	}
	return v, nil
}

// session is the user of a session cookie's value.
func (a *authn) session(v string) (string, error) {
	k := sha256.Sum256([]byte(v))
	now := time.Now()
	a.mu.Lock()
	s := a.mu.sessions[k]
	if s != nil && now.Sub(s.created) >= sessionLifetime {
		delete(a.mu.sessions, k)
		s = nil
	}
	var user string
	check := false
	if s != nil {
		user = s.user
		check = now.Sub(s.checked) >= userCheckInterval
	}
	a.mu.Unlock()
	if s == nil {
		return "", errors.New("the session has ended (expired, signed out or the server restarted); sign in again")
	}
	if check {
		if !a.userExists(user) {
			a.endSession(v)
			return "", errors.New("the session's user no longer exists")
		}
		a.mu.Lock()
		s.checked = now
		a.mu.Unlock()
	}
	return user, nil
}

func (a *authn) endSession(v string) {
	a.mu.Lock()
	delete(a.mu.sessions, sha256.Sum256([]byte(v)))
	a.mu.Unlock()
}

// authRequired: the server asks for credentials (for the dashboard).
func (s *Server) authRequired() bool { return s.o.RequireAuth }

// loginRequest is the body of POST /api/login.
type loginRequest struct {
	User     string `json:"user"`
	Password string `json:"password"`
}

// POST /api/login: the dashboard's sign-in. Same origin only; sets the
// session cookie.
func (s *Server) login(w http.ResponseWriter, r *http.Request) error {
	if o := r.Header.Get("Origin"); o != "" && !s.guard.provesOrigin(r, false) {
		return errorf(http.StatusForbidden, CodeCrossOrigin, "sign in from the dashboard's own page (Origin %s is not this server)", o)
	}
	if sfs := r.Header.Get("Sec-Fetch-Site"); sfs != "" && sfs != "same-origin" && sfs != "none" {
		return errorf(http.StatusForbidden, CodeCrossOrigin, "sign in from the dashboard's own page (Sec-Fetch-Site: %s)", sfs)
	}
	var req loginRequest
	if err := s.decodeJSON(w, r, &req); err != nil {
		return err
	}
	if req.User == "" {
		return badRequest(`"user" is required`)
	}
	if err := s.authn.verify(req.User, req.Password); err != nil {
		s.authn.failures.WithLabelValues(authLogin).Inc()
		s.log.Info("http: failed sign-in", "user", req.User, "remote", r.RemoteAddr)
		return errorf(http.StatusUnauthorized, CodeUnauthorized, "%s", err)
	}
	v, err := s.authn.newSession(req.User)
	if err != nil {
		return err
	}
	http.SetCookie(w, &http.Cookie{
		Name: sessionCookie, Value: v, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: r.TLS != nil, MaxAge: int(sessionLifetime / time.Second),
	})
	s.log.Info("http: signed in", "user", req.User, "remote", r.RemoteAddr)
	return writeJSON(w, http.StatusOK, whoami{User: &req.User, Method: authSession, AuthRequired: s.authRequired(), ACLs: s.o.Authorizer.Enabled()})
}

// POST /api/logout: ends the session of the cookie, if any.
func (s *Server) logout(w http.ResponseWriter, r *http.Request) error {
	if c, err := r.Cookie(sessionCookie); err == nil {
		s.authn.endSession(c.Value)
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: r.TLS != nil, MaxAge: -1})
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// whoami is the answer of GET /api/whoami (and of a login).
type whoami struct {
	User         *string `json:"user"`             // null: anonymous
	Method       string  `json:"method,omitempty"` // basic, bearer or session
	AuthRequired bool    `json:"auth_required"`
	ACLs         bool    `json:"acls"` // the ACLs are enforced
}

// GET /api/whoami: who the request is from, and whether the server
// requires credentials.
func (s *Server) whoami(w http.ResponseWriter, r *http.Request) error {
	id := identityOf(r)
	out := whoami{Method: id.method, AuthRequired: s.authRequired(), ACLs: s.o.Authorizer.Enabled()}
	if id.user != "" {
		out.User = &id.user
	}
	return writeJSON(w, http.StatusOK, out)
}
