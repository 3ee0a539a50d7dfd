// Package acl owns what a principal may do: Kafka's access control
// lists (resource types, literal and prefixed patterns, operations,
// allow and deny), their store in a data directory
// (DIR/security/acls.json), and the Authorizer that every request of
// the Kafka and HTTP servers asks. The numeric codes are Kafka's, so
// that wire values convert by a cast.
package acl

import (
	"errors"
	"fmt"
	"net"
	"strings"
)

// ResourceType is what an ACL is about.
type ResourceType int8

const (
	ResourceUnknown ResourceType = 0
	ResourceAny     ResourceType = 1 // filters only
	Topic           ResourceType = 2
	Group           ResourceType = 3
	Cluster         ResourceType = 4
	TransactionalID ResourceType = 5
)

// PatternType is how an ACL's resource name matches names.
type PatternType int8

const (
	PatternUnknown PatternType = 0
	PatternAny     PatternType = 1 // filters: any pattern type, names compared as written
	PatternMatch   PatternType = 2 // filters: the bindings that would apply to a name
	Literal        PatternType = 3
	Prefixed       PatternType = 4
)

// Operation is what an ACL allows or denies.
type Operation int8

const (
	OpUnknown       Operation = 0
	OpAny           Operation = 1 // filters only
	All             Operation = 2
	Read            Operation = 3
	Write           Operation = 4
	Create          Operation = 5
	Delete          Operation = 6
	Alter           Operation = 7
	Describe        Operation = 8
	ClusterAction   Operation = 9
	DescribeConfigs Operation = 10
	AlterConfigs    Operation = 11
	IdempotentWrite Operation = 12
)

// Permission is whether an ACL allows or denies.
type Permission int8

const (
	PermissionUnknown Permission = 0
	PermissionAny     Permission = 1 // filters only
	Deny              Permission = 2
	Allow             Permission = 3
)

// ClusterName is the name of the one cluster resource.
const ClusterName = "kafka-cluster"

// Wildcard as a literal resource name matches every resource of its
// type; as a host, any host; "User:*" is every principal.
const Wildcard = "*"

var (
	resourceNames   = map[ResourceType]string{ResourceAny: "ANY", Topic: "TOPIC", Group: "GROUP", Cluster: "CLUSTER", TransactionalID: "TRANSACTIONAL_ID"}
	patternNames    = map[PatternType]string{PatternAny: "ANY", PatternMatch: "MATCH", Literal: "LITERAL", Prefixed: "PREFIXED"}
	operationNames  = map[Operation]string{OpAny: "ANY", All: "ALL", Read: "READ", Write: "WRITE", Create: "CREATE", Delete: "DELETE", Alter: "ALTER", Describe: "DESCRIBE", ClusterAction: "CLUSTER_ACTION", DescribeConfigs: "DESCRIBE_CONFIGS", AlterConfigs: "ALTER_CONFIGS", IdempotentWrite: "IDEMPOTENT_WRITE"}
	permissionNames = map[Permission]string{PermissionAny: "ANY", Deny: "DENY", Allow: "ALLOW"}
)

func name[T comparable](names map[T]string, v T, n int8) string {
	if s, ok := names[v]; ok {
		return s
	}
	return fmt.Sprintf("UNKNOWN(%d)", n)
}

func (t ResourceType) String() string { return name(resourceNames, t, int8(t)) }
func (p PatternType) String() string  { return name(patternNames, p, int8(p)) }
func (o Operation) String() string    { return name(operationNames, o, int8(o)) }
func (p Permission) String() string   { return name(permissionNames, p, int8(p)) }

// ErrInvalid is an ACL or filter refused, with the reason wrapped in.
var ErrInvalid = errors.New("invalid ACL")

func parse[T comparable](names map[T]string, kind, s string) (T, error) {
	norm := strings.ToUpper(strings.NewReplacer("-", "_", " ", "_").Replace(strings.TrimSpace(s)))
	for v, n := range names {
		if n == norm || strings.ReplaceAll(n, "_", "") == norm {
			return v, nil
		}
	}
	var zero T
	valid := make([]string, 0, len(names))
	for _, n := range names {
		valid = append(valid, strings.ToLower(n))
	}
	return zero, fmt.Errorf("%w: unknown %s %q (one of %s)", ErrInvalid, kind, s, strings.Join(sorted(valid), ", "))
}

// ParseResourceType reads "topic", "TRANSACTIONAL_ID", "transactional-id"….
func ParseResourceType(s string) (ResourceType, error) {
	return parse(resourceNames, "resource type", s)
}

// ParsePatternType reads "literal", "prefixed", "any", "match".
func ParsePatternType(s string) (PatternType, error) { return parse(patternNames, "pattern type", s) }

// ParseOperation reads "read", "describe-configs", "IDEMPOTENT_WRITE"….
func ParseOperation(s string) (Operation, error) { return parse(operationNames, "operation", s) }

// ParsePermission reads "allow", "deny".
func ParsePermission(s string) (Permission, error) { return parse(permissionNames, "permission", s) }

// Binding is one ACL: Principal from Host is allowed (or denied)
// Operation on the resources of ResourceType that Name matches.
type Binding struct {
	ResourceType ResourceType `json:"resource_type"`
	Name         string       `json:"name"`
	Pattern      PatternType  `json:"pattern"`
	Principal    string       `json:"principal"`
	Host         string       `json:"host"`
	Operation    Operation    `json:"operation"`
	Permission   Permission   `json:"permission"`
}

func (b Binding) String() string {
	return fmt.Sprintf("%s %s %s on %s %s:%q from %s", b.Principal, b.Permission, b.Operation, b.Pattern, b.ResourceType, b.Name, b.Host)
}

// validOps are the operations that mean something for each resource
// type (Kafka's AclEntry.supportedOperations).
var validOps = map[ResourceType][]Operation{
	Topic:           {Read, Write, Create, Describe, Delete, Alter, DescribeConfigs, AlterConfigs},
	Group:           {Read, Describe, Delete},
	Cluster:         {Create, ClusterAction, DescribeConfigs, AlterConfigs, IdempotentWrite, Alter, Describe},
	TransactionalID: {Describe, Write},
}

// Validate reports what CreateAcls would refuse in b.
func (b Binding) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
	}
	ops, ok := validOps[b.ResourceType]
	switch {
	case !ok:
		return bad("resource type %s: want topic, group, cluster or transactional_id", b.ResourceType)
	case b.Pattern != Literal && b.Pattern != Prefixed:
		return bad("pattern type %s: want literal or prefixed", b.Pattern)
	case b.Name == "":
		return bad("empty resource name")
	case b.Pattern == Prefixed && b.Name == Wildcard:
		return bad("a prefixed pattern %q: use the literal wildcard %q for every %s", Wildcard, Wildcard, strings.ToLower(b.ResourceType.String()))
	case b.ResourceType == Cluster && b.Name != ClusterName:
		return bad("the cluster resource is named %q, not %q", ClusterName, b.Name)
	case b.Permission != Allow && b.Permission != Deny:
		return bad("permission %s: want allow or deny", b.Permission)
	}
	if err := validPrincipal(b.Principal); err != nil {
		return bad("%v", err)
	}
	if b.Host != Wildcard && net.ParseIP(b.Host) == nil {
		return bad("host %q: want %q or an IP address", b.Host, Wildcard)
	}
	if b.Operation != All && !contains(ops, b.Operation) {
		return bad("operation %s does not apply to a %s", b.Operation, strings.ToLower(b.ResourceType.String()))
	}
	return nil
}

func validPrincipal(p string) error {
	kind, name, ok := strings.Cut(p, ":")
	if !ok || kind == "" || name == "" {
		return fmt.Errorf("principal %q: want TYPE:NAME, such as User:alice or User:*", p)
	}
	if kind != "User" {
		return fmt.Errorf("principal %q: only the User type is known", p)
	}
	return nil
}

func contains[T comparable](s []T, v T) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func sorted(s []string) []string {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	return s
}

// Filter selects bindings, as DescribeAcls and DeleteAcls do: an empty
// string matches any value, and so do the Any values of the enums.
type Filter struct {
	ResourceType ResourceType
	Name         string
	Pattern      PatternType
	Principal    string
	Host         string
	Operation    Operation
	Permission   Permission
}

// Validate reports what is wrong with f, if anything.
func (f Filter) Validate() error {
	switch {
	case f.ResourceType == ResourceUnknown || resourceNames[f.ResourceType] == "":
		return fmt.Errorf("%w filter: resource type %s", ErrInvalid, f.ResourceType)
	case f.Pattern == PatternUnknown || patternNames[f.Pattern] == "":
		return fmt.Errorf("%w filter: pattern type %s", ErrInvalid, f.Pattern)
	case f.Operation == OpUnknown || operationNames[f.Operation] == "":
		return fmt.Errorf("%w filter: operation %s", ErrInvalid, f.Operation)
	case f.Permission == PermissionUnknown || permissionNames[f.Permission] == "":
		return fmt.Errorf("%w filter: permission %s", ErrInvalid, f.Permission)
	}
	return nil
}

// Matches reports whether f selects b. With PatternMatch, the name is a
// resource's name and f selects the bindings that apply to it (literal
// equal or wildcard, prefixed a prefix of it).
func (f Filter) Matches(b Binding) bool {
	if f.ResourceType != ResourceAny && f.ResourceType != b.ResourceType {
		return false
	}
	if f.Operation != OpAny && f.Operation != b.Operation {
		return false
	}
	if f.Permission != PermissionAny && f.Permission != b.Permission {
		return false
	}
	if f.Principal != "" && f.Principal != b.Principal {
		return false
	}
	if f.Host != "" && f.Host != b.Host {
		return false
	}
	switch f.Pattern {
	case PatternAny:
		return f.Name == "" || f.Name == b.Name
	case PatternMatch:
		return f.Name == "" || nameMatches(b, f.Name)
	default:
		return f.Pattern == b.Pattern && (f.Name == "" || f.Name == b.Name)
	}
}

// nameMatches reports whether binding b's pattern covers resource name.
func nameMatches(b Binding, name string) bool {
	switch b.Pattern {
	case Literal:
		return b.Name == name || b.Name == Wildcard
	case Prefixed:
		return strings.HasPrefix(name, b.Name)
	}
	return false
}
