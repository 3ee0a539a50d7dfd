package web

import (
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// Browser safety, always on (also on loopback, without authentication).
// A page on another origin can make the user's browser send requests to
// the API; the guard makes sure those change nothing and read nothing:
//
//   - Host: the Host header must name a host the server answers to: the
//     listen address, the local address of the connection, localhost,
//     127.0.0.1 and ::1, the machine's host name, the machine's interface
//     addresses when listening on 0.0.0.0 or ::, the host of
//     Options.Advertise and the names in Options.AllowedHosts (any port).
//     Anything else is answered 421 misdirected_request. A page that has
//     a name of its own resolve to 127.0.0.1 (DNS rebinding) sends its own
//     name as the Host, so it reaches nothing. /healthz and /readyz are
//     exempt (load balancers probe them by any name; they tell nothing).
//   - Cross-origin writes: a request other than GET, HEAD or OPTIONS whose
//     Sec-Fetch-Site is cross-site or same-site, or whose Origin (without
//     Origin: Referer) names another host than the request's Host, is
//     refused 403 cross_origin (http.CrossOriginProtection, plus the
//     Referer for browsers that send neither). Requests with none of
//     these headers (curl, scripts, Kafka tools) pass: they are not a
//     browser acting for someone. Origins in Options.CORSOrigins pass.
//   - Simple content types: text/plain and the form encodings are what a
//     page may POST anywhere without asking first (no CORS preflight), so
//     an API request with one of them is answered 415 unless it proves it
//     comes from our own page (Sec-Fetch-Site: same-origin, or an Origin
//     that is ours or in Options.CORSOrigins).
//   - CORS: no Access-Control-* headers at all, unless Options.CORSOrigins
//     names origins: a request from one of them gets
//     Access-Control-Allow-Origin (that origin, never *, and never with
//     credentials: such a page authenticates with a bearer token) and
//     Vary: Origin, and its preflight OPTIONS is answered.
//
// Each refusal is counted in passbook_http_guard_refused_total by reason.

// Reasons of the guard's refusals (the metric's label).
const (
	refusedHost        = "host"
	refusedCrossOrigin = "cross_origin"
	refusedContentType = "content_type"
)

type guard struct {
	s *Server
	// names are the host names and IP literals the server answers to,
	// lower case, without a port.
	names map[string]bool
	// anyHost: AllowedHosts has "*" — no Host check at all.
	anyHost bool
	// listen is the address Serve listens on (unset for a Server served
	// by an http.Server of its own): its IP, and, for 0.0.0.0 or ::, the
	// machine's interface addresses.
	listen  atomic.Pointer[listenAddrs]
	cop     *http.CrossOriginProtection
	cors    map[string]bool // origins, as browsers send them
	refused *prometheus.CounterVec
}

type listenAddrs struct {
	ips map[netip.Addr]bool
}

func newGuard(s *Server) *guard {
	g := &guard{s: s, names: map[string]bool{"localhost": true}, cop: http.NewCrossOriginProtection(), cors: map[string]bool{}}
	for _, h := range s.o.AllowedHosts {
		if h == "*" {
			g.anyHost = true
			continue
		}
		if n := hostName(h); n != "" {
			g.names[n] = true
		}
	}
	if s.o.Advertise != "" {
		if n := hostName(s.o.Advertise); n != "" {
			g.names[n] = true
		}
	}
	if h, err := os.Hostname(); err == nil && h != "" {
		g.names[strings.ToLower(h)] = true
	}
	for _, o := range s.o.CORSOrigins {
		if o = canonicalOrigin(o); o != "" {
			g.cors[o] = true
			g.cop.AddTrustedOrigin(o)
		}
	}
	g.refused = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "passbook_http_guard_refused_total",
		Help: "HTTP requests refused by the browser-safety guard, by reason: host (421, a Host the server does not answer to: DNS rebinding), cross_origin (403, a write from another origin's page), content_type (415, a simple content type without proof of our origin).",
	}, []string{"reason"})
	for _, r := range []string{refusedHost, refusedCrossOrigin, refusedContentType} {
		g.refused.WithLabelValues(r)
	}
	s.reg.MustRegister(g.refused)
	return g
}

// setListener records the address Serve listens on.
func (g *guard) setListener(a net.Addr) {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return
	}
	la := &listenAddrs{ips: map[netip.Addr]bool{}}
	ip, ok := netip.AddrFromSlice(ta.IP)
	if !ok {
		return
	}
	ip = ip.Unmap()
	la.ips[ip] = true
	if ip.IsUnspecified() {
		if addrs, err := net.InterfaceAddrs(); err == nil {
			for _, a := range addrs {
				if n, ok := a.(*net.IPNet); ok {
					if ip, ok := netip.AddrFromSlice(n.IP); ok {
						la.ips[ip.Unmap()] = true
					}
				}
			}
		}
	}
	g.listen.Store(la)
}

// ValidateOrigin says whether o can be an entry of Options.CORSOrigins:
// scheme://host[:port] as a browser sends it in Origin, nothing more.
func ValidateOrigin(o string) error {
	if o == "*" {
		return fmt.Errorf("CORS origin %q: name the origins (https://app.example); * would let every page write to the API", o)
	}
	if canonicalOrigin(o) == "" {
		return fmt.Errorf("CORS origin %q: want scheme://host[:port], such as https://app.example or http://localhost:3000", o)
	}
	return nil
}

// canonicalOrigin is o as browsers send it (lower-case scheme and host,
// no path), or "" if o is not an origin.
func canonicalOrigin(o string) string {
	u, err := url.Parse(o)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return ""
	}
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Host)
}

// hostName is the host of "host", "host:port", "[v6]:port" or a URL,
// lower case, without a trailing dot; "" if there is none.
func hostName(hostport string) string {
	h := hostport
	if strings.Contains(h, "://") {
		if u, err := url.Parse(h); err == nil {
			h = u.Host
		}
	}
	if host, _, err := net.SplitHostPort(h); err == nil {
		h = host
	} else {
		h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	}
	return strings.TrimSuffix(strings.ToLower(h), ".")
}

// check refuses what the guard refuses, writing the answer; it reports
// whether the request may go on.
func (g *guard) check(w http.ResponseWriter, r *http.Request) bool {
	if r.URL.Path != "/healthz" && r.URL.Path != "/readyz" && !g.hostAllowed(r) {
		g.refuse(w, r, refusedHost, errorf(http.StatusMisdirectedRequest, CodeMisdirected,
			"this server does not answer to the host %q (the Host header); use its address or localhost, or start it with --http-allowed-hosts %s",
			r.Host, orDefault(hostName(r.Host), "NAME")))
		return false
	}
	origin := r.Header.Get("Origin")
	allowedCORS := origin != "" && g.cors[canonicalOrigin(origin)]
	if len(g.cors) > 0 {
		w.Header().Add("Vary", "Origin")
		if allowedCORS {
			w.Header().Set("Access-Control-Allow-Origin", origin)
			if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
				h := w.Header()
				h.Set("Access-Control-Allow-Methods", "GET, HEAD, POST, DELETE")
				h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, Last-Event-ID")
				h.Set("Access-Control-Max-Age", "600")
				w.WriteHeader(http.StatusNoContent)
				return false
			}
		}
	}
	if !safeMethod(r.Method) {
		if err := g.crossOrigin(r); err != "" {
			g.refuse(w, r, refusedCrossOrigin, errorf(http.StatusForbidden, CodeCrossOrigin,
				"%s %s from another origin's page is refused (%s); the API is written to by its own dashboard, by non-browser clients, or by origins named with --http-cors-origin",
				r.Method, r.URL.Path, err))
			return false
		}
		if strings.HasPrefix(r.URL.Path, "/api/") && simpleContentType(r) && !g.provesOrigin(r, allowedCORS) {
			g.refuse(w, r, refusedContentType, errorf(http.StatusUnsupportedMediaType, CodeUnsupportedMedia,
				"Content-Type %s is what any web page may send without asking (no CORS preflight), so it is accepted only from the dashboard's own page; send application/octet-stream (raw bytes) or application/json",
				r.Header.Get("Content-Type")))
			return false
		}
	}
	return true
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func (g *guard) refuse(w http.ResponseWriter, r *http.Request, reason string, err *apiError) {
	g.refused.WithLabelValues(reason).Inc()
	g.s.log.Debug("http: refused by the browser-safety guard", "reason", reason, "method", r.Method, "path", r.URL.Path,
		"host", r.Host, "origin", r.Header.Get("Origin"), "remote", r.RemoteAddr)
	g.s.writeError(w, r, err)
}

func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

// hostAllowed says whether r's Host names this server.
func (g *guard) hostAllowed(r *http.Request) bool {
	if g.anyHost {
		return true
	}
	h := hostName(r.Host)
	if h == "" {
		return false
	}
	if g.names[h] {
		return true
	}
	ip, err := netip.ParseAddr(h)
	if err != nil {
		return false // a name we do not know: DNS rebinding, or a missing --http-allowed-hosts
	}
	ip = ip.Unmap().WithZone("")
	if ip.IsLoopback() {
		return true
	}
	// The address the client reached us at is ours, whatever the listener.
	if la, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		if ap, err := netip.ParseAddrPort(la.String()); err == nil && ap.Addr().Unmap().WithZone("") == ip {
			return true
		}
	}
	if la := g.listen.Load(); la != nil && la.ips[ip] {
		return true
	}
	return false
}

// crossOrigin says why r comes from another origin's page, or "".
func (g *guard) crossOrigin(r *http.Request) string {
	sfs := r.Header.Get("Sec-Fetch-Site")
	origin := r.Header.Get("Origin")
	if err := g.cop.Check(r); err != nil {
		if sfs != "" {
			return "Sec-Fetch-Site: " + sfs
		}
		return "Origin: " + origin
	}
	if sfs != "" || origin != "" {
		return ""
	}
	// Neither header: an old browser, or not a browser. A Referer from
	// another host still gives a page away.
	if ref := r.Header.Get("Referer"); ref != "" {
		u, err := url.Parse(ref)
		if err != nil || !strings.EqualFold(u.Host, r.Host) {
			return "Referer: " + ref
		}
	}
	return ""
}

// provesOrigin: r says it comes from our own page (or a CORS origin).
func (g *guard) provesOrigin(r *http.Request, allowedCORS bool) bool {
	if allowedCORS || r.Header.Get("Sec-Fetch-Site") == "same-origin" {
		return true
	}
	u, err := url.Parse(r.Header.Get("Origin"))
	return err == nil && u.Host != "" && strings.EqualFold(u.Host, r.Host)
}

// simpleContentType: a body type a page may send cross-origin without a
// preflight (the CORS "CORS-safelisted" request content types).
func simpleContentType(r *http.Request) bool {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return false
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		mt = strings.ToLower(strings.TrimSpace(strings.Split(ct, ";")[0]))
	}
	return slices.Contains([]string{"text/plain", "application/x-www-form-urlencoded", "multipart/form-data"}, mt)
}
