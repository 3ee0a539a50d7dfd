package acl

import (
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"
)

// Authorizer answers whether a principal may do an operation on a
// resource, with Kafka's rules (its StandardAuthorizer with
// allow.everyone.if.no.acl.found=false):
//
//   - super users may do everything;
//   - otherwise an operation needs an ALLOW binding and no DENY binding
//     that match the principal (or User:*), the client's host (or *),
//     and the resource (a literal name equal to it or *, or a prefix of
//     it); deny wins;
//   - ALL matches every operation; DESCRIBE is also allowed by READ,
//     WRITE, DELETE and ALTER, and DESCRIBE_CONFIGS by ALTER_CONFIGS
//     (a deny of those does not deny the implied one, as in Kafka);
//   - no matching binding: denied.
//
// A nil *Authorizer allows everything: it is the server without
// --authorize.
type Authorizer struct {
	store *Store
	super map[string]bool
	log   *slog.Logger

	mu       sync.Mutex
	lastWarn time.Time
}

// NewAuthorizer returns an Authorizer over the ACLs of store.
func NewAuthorizer(store *Store, superUsers []string, log *slog.Logger) *Authorizer {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	a := &Authorizer{store: store, super: map[string]bool{}, log: log}
	for _, p := range superUsers {
		a.super[strings.TrimSpace(p)] = true
	}
	return a
}

// Enabled reports whether ACLs are enforced (a is not nil).
func (a *Authorizer) Enabled() bool { return a != nil }

// Store is the ACL store behind a, nil for a nil Authorizer.
func (a *Authorizer) Store() *Store {
	if a == nil {
		return nil
	}
	return a.store
}

// SuperUser reports whether principal is one of the super users (every
// principal is, for a nil Authorizer).
func (a *Authorizer) SuperUser(principal string) bool {
	return a == nil || a.super[principal]
}

// implies lists, for an operation asked, the operations whose ALLOW
// grants it.
var implies = map[Operation][]Operation{
	Describe:        {Describe, Read, Write, Delete, Alter},
	DescribeConfigs: {DescribeConfigs, AlterConfigs},
}

// Allowed reports whether principal, connected from host (an IP
// address), may do op on the resource of type rt named name.
func (a *Authorizer) Allowed(principal, host string, op Operation, rt ResourceType, name string) bool {
	if a == nil || a.super[principal] {
		return true
	}
	bindings, err := a.store.all()
	if err != nil {
		a.warn(err)
		return false // fail closed: the ACL file is unreadable
	}
	granting := implies[op]
	if granting == nil {
		granting = []Operation{op}
	}
	allowed := false
	for _, b := range bindings {
		if b.ResourceType != rt || !nameMatches(b, name) {
			continue
		}
		if b.Principal != principal && b.Principal != "User:"+Wildcard {
			continue
		}
		if b.Host != Wildcard && b.Host != host {
			continue
		}
		switch b.Permission {
		case Deny:
			if b.Operation == op || b.Operation == All {
				return false
			}
		case Allow:
			if b.Operation == All || slices.Contains(granting, b.Operation) {
				allowed = true
			}
		}
	}
	return allowed
}

// warn logs, at most once a minute, that the ACLs cannot be read.
func (a *Authorizer) warn(err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if time.Since(a.lastWarn) < time.Minute {
		return
	}
	a.lastWarn = time.Now()
	a.log.Error("acl: cannot read the ACLs; denying every request but super users'", "err", err)
}
