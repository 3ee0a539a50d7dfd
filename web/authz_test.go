package web

import "testing"

// Every route says what it needs of the ACLs (or that its handler
// checks or filters by itself, or that it is open): a new endpoint
// cannot be forgotten open.
func TestAuthz_EveryRouteDecides(t *testing.T) {
	e := newEnv(t, nil)
	seen := map[string]bool{}
	for _, r := range e.s.routes {
		p := r.method + " " + r.pattern
		seen[p] = true
		if _, ok := routeNeeds[p]; !ok {
			t.Errorf("route %s has no entry in routeNeeds", p)
		}
	}
	for p := range routeNeeds {
		if !seen[p] {
			t.Errorf("routeNeeds has %s, which is not a route", p)
		}
	}
}
