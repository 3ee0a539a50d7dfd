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
	ix, err := a.store.index()
	if err != nil {
		a.warn(err)
		return false // fail closed: the ACL file is unreadable
	}
	granting := grants(op)
	allowed, denied := false, false
	ix.matching(rt, name, func(b Binding) bool {
		if !appliesTo(b, principal, host) {
			return true
		}
		switch b.Permission {
		case Deny:
			if b.Operation == op || b.Operation == All {
				denied = true
			}
		case Allow:
			allowed = allowed || b.Operation == All || slices.Contains(granting, b.Operation)
		}
		return !denied
	})
	return allowed && !denied
}

// grants lists the operations whose ALLOW grants op.
func grants(op Operation) []Operation {
	if g := implies[op]; g != nil {
		return g
	}
	return []Operation{op}
}

// appliesTo reports whether b is about principal connecting from host.
func appliesTo(b Binding, principal, host string) bool {
	return (b.Principal == principal || b.Principal == "User:"+Wildcard) && (b.Host == Wildcard || b.Host == host)
}

// AllowedAny reports whether principal from host may do op on some
// resource of type rt — Kafka's authorizeByResourceType, which Kafka 4
// asks of an idempotent producer without IDEMPOTENT_WRITE on the cluster
// (KIP-679: WRITE on any topic will do). It holds when an ALLOW of op
// matches and no DENY covers all that it allows: a DENY of the literal
// "*" covers everything, a DENY literal the same literal, and a DENY
// prefix every literal and prefix that starts with it.
func (a *Authorizer) AllowedAny(principal, host string, op Operation, rt ResourceType) bool {
	if a == nil || a.super[principal] {
		return true
	}
	ix, err := a.store.index()
	if err != nil {
		a.warn(err)
		return false
	}
	t := ix.of(rt)
	if t == nil {
		return false
	}
	granting := grants(op)
	relevant := func(b Binding, perm Permission) bool {
		if b.Permission != perm || !appliesTo(b, principal, host) {
			return false
		}
		if perm == Deny {
			return b.Operation == op || b.Operation == All
		}
		return b.Operation == All || slices.Contains(granting, b.Operation)
	}
	has := func(bs []Binding, perm Permission) bool {
		return slices.ContainsFunc(bs, func(b Binding) bool { return relevant(b, perm) })
	}
	if has(t.literal[Wildcard], Deny) {
		return false
	}
	var denyPrefixes []string
	for p, bs := range t.prefixed {
		if has(bs, Deny) {
			denyPrefixes = append(denyPrefixes, p)
		}
	}
	deniedByPrefix := func(name string) bool {
		return slices.ContainsFunc(denyPrefixes, func(p string) bool { return strings.HasPrefix(name, p) })
	}
	for p, bs := range t.prefixed {
		if has(bs, Allow) && !deniedByPrefix(p) {
			return true
		}
	}
	for name, bs := range t.literal {
		if has(bs, Allow) && (name == Wildcard || !has(bs, Deny) && !deniedByPrefix(name)) {
			return true
		}
	}
	return false
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
