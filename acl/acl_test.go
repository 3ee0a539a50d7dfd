package acl_test

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/passbook-log/passbook/acl"
	"github.com/passbook-log/passbook/internal/jsonfile"
)

func allow(rt acl.ResourceType, name string, pt acl.PatternType, principal string, op acl.Operation) acl.Binding {
	return acl.Binding{ResourceType: rt, Name: name, Pattern: pt, Principal: principal, Host: "*", Operation: op, Permission: acl.Allow}
}

func deny(b acl.Binding) acl.Binding {
	b.Permission = acl.Deny
	return b
}

func TestAuthorizer_KafkaRules(t *testing.T) {
	store, err := acl.OpenStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	fromHost := allow(acl.Topic, "audit", acl.Literal, "User:alice", acl.Read)
	fromHost.Host = "10.0.0.1"
	err = store.Add(
		allow(acl.Topic, "orders", acl.Literal, "User:alice", acl.Write),
		allow(acl.Topic, "orders", acl.Literal, "User:bob", acl.Read),
		allow(acl.Topic, "logs-", acl.Prefixed, "User:bob", acl.All),
		deny(allow(acl.Topic, "logs-secret", acl.Literal, "User:bob", acl.Read)),
		allow(acl.Topic, "*", acl.Literal, "User:carol", acl.Describe),
		allow(acl.Topic, "public", acl.Literal, "User:*", acl.Read),
		deny(allow(acl.Topic, "public", acl.Literal, "User:mallory", acl.All)),
		allow(acl.Group, "app-", acl.Prefixed, "User:bob", acl.Read),
		allow(acl.Cluster, acl.ClusterName, acl.Literal, "User:ops", acl.AlterConfigs),
		allow(acl.TransactionalID, "tx", acl.Literal, "User:alice", acl.Write),
		fromHost,
	)
	if err != nil {
		t.Fatal(err)
	}
	a := acl.NewAuthorizer(store, []string{"User:admin"}, nil)
	tests := []struct {
		principal, host string
		op              acl.Operation
		rt              acl.ResourceType
		name            string
		want            bool
	}{
		{"User:alice", "127.0.0.1", acl.Write, acl.Topic, "orders", true},
		{"User:alice", "127.0.0.1", acl.Describe, acl.Topic, "orders", true}, // implied by Write
		{"User:alice", "127.0.0.1", acl.Read, acl.Topic, "orders", false},
		{"User:alice", "127.0.0.1", acl.Delete, acl.Topic, "orders", false},
		{"User:bob", "127.0.0.1", acl.Read, acl.Topic, "orders", true},
		{"User:bob", "127.0.0.1", acl.Write, acl.Topic, "orders", false},
		{"User:bob", "127.0.0.1", acl.Write, acl.Topic, "logs-app", true},       // prefixed, All
		{"User:bob", "127.0.0.1", acl.Delete, acl.Topic, "logs-app", true},      // All
		{"User:bob", "127.0.0.1", acl.Read, acl.Topic, "logs-secret", false},    // deny wins
		{"User:bob", "127.0.0.1", acl.Write, acl.Topic, "logs-secret", true},    // the deny is of Read only
		{"User:bob", "127.0.0.1", acl.Describe, acl.Topic, "logs-secret", true}, // a deny of Read does not deny Describe
		{"User:bob", "127.0.0.1", acl.Read, acl.Topic, "logs", false},           // "logs" has not the prefix "logs-"
		{"User:carol", "127.0.0.1", acl.Describe, acl.Topic, "anything", true},  // literal wildcard
		{"User:carol", "127.0.0.1", acl.Read, acl.Topic, "anything", false},
		{"User:dave", "127.0.0.1", acl.Read, acl.Topic, "public", true}, // User:*
		{"User:mallory", "127.0.0.1", acl.Read, acl.Topic, "public", false},
		{"User:mallory", "127.0.0.1", acl.Describe, acl.Topic, "public", false}, // denied All
		{"User:bob", "127.0.0.1", acl.Read, acl.Group, "app-1", true},
		{"User:bob", "127.0.0.1", acl.Describe, acl.Group, "app-1", true},
		{"User:bob", "127.0.0.1", acl.Delete, acl.Group, "app-1", false},
		{"User:bob", "127.0.0.1", acl.Read, acl.Topic, "app-1", false},                     // a group ACL is not a topic ACL
		{"User:ops", "127.0.0.1", acl.DescribeConfigs, acl.Cluster, acl.ClusterName, true}, // implied by AlterConfigs
		{"User:ops", "127.0.0.1", acl.Describe, acl.Cluster, acl.ClusterName, false},
		{"User:alice", "127.0.0.1", acl.Write, acl.TransactionalID, "tx", true},
		{"User:alice", "127.0.0.1", acl.Describe, acl.TransactionalID, "tx", true},
		{"User:alice", "10.0.0.1", acl.Read, acl.Topic, "audit", true},
		{"User:alice", "10.0.0.2", acl.Read, acl.Topic, "audit", false},    // another host
		{"User:admin", "127.0.0.1", acl.Delete, acl.Topic, "orders", true}, // super user
		{"User:ANONYMOUS", "127.0.0.1", acl.Describe, acl.Topic, "nothing", false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s %s %s %s %s", tt.principal, tt.host, tt.op, tt.rt, tt.name), func(t *testing.T) {
			if got := a.Allowed(tt.principal, tt.host, tt.op, tt.rt, tt.name); got != tt.want {
				t.Errorf("Allowed = %v, want %v", got, tt.want)
			}
		})
	}
	var none *acl.Authorizer
	if !none.Allowed("User:ANONYMOUS", "1.2.3.4", acl.Delete, acl.Cluster, acl.ClusterName) || none.Enabled() {
		t.Error("a nil Authorizer must allow everything")
	}
}

func TestStore_ValidatesAndFilters(t *testing.T) {
	store, _ := acl.OpenStore(t.TempDir())
	good := allow(acl.Topic, "orders", acl.Literal, "User:alice", acl.Write)
	bad := []acl.Binding{
		allow(acl.Topic, "", acl.Literal, "User:alice", acl.Write),
		allow(acl.Topic, "*", acl.Prefixed, "User:alice", acl.Write),
		allow(acl.Topic, "orders", acl.PatternMatch, "User:alice", acl.Write),
		allow(acl.Cluster, "other", acl.Literal, "User:alice", acl.Alter),
		allow(acl.Group, "g", acl.Literal, "User:alice", acl.Write), // Write does not apply to a group
		allow(acl.Topic, "orders", acl.Literal, "alice", acl.Write),
		allow(acl.Topic, "orders", acl.Literal, "Group:x", acl.Write),
		allow(acl.ResourceAny, "orders", acl.Literal, "User:alice", acl.Write),
		{ResourceType: acl.Topic, Name: "t", Pattern: acl.Literal, Principal: "User:a", Host: "not-an-ip", Operation: acl.Read, Permission: acl.Allow},
		{ResourceType: acl.Topic, Name: "t", Pattern: acl.Literal, Principal: "User:a", Host: "*", Operation: acl.Read, Permission: acl.PermissionAny},
	}
	for _, b := range bad {
		if err := store.Add(good, b); !errors.Is(err, acl.ErrInvalid) {
			t.Errorf("Add(%v) = %v, want ErrInvalid", b, err)
		}
	}
	all := acl.Filter{ResourceType: acl.ResourceAny, Pattern: acl.PatternAny, Operation: acl.OpAny, Permission: acl.PermissionAny}
	if got, _ := store.List(all); len(got) != 0 {
		t.Fatalf("a refused Add stored %v", got)
	}
	pre := allow(acl.Topic, "ord", acl.Prefixed, "User:bob", acl.Read)
	if err := store.Add(good, good, pre); err != nil {
		t.Fatal(err)
	}
	if got, _ := store.List(all); len(got) != 2 {
		t.Fatalf("List = %v, want 2 bindings (a duplicate is one)", got)
	}
	match := all
	match.Pattern, match.Name = acl.PatternMatch, "orders"
	if got, _ := store.List(match); len(got) != 2 {
		t.Errorf("MATCH orders = %v, want both (literal and prefix)", got)
	}
	lit := all
	lit.Pattern, lit.Name = acl.Literal, "orders"
	if got, _ := store.List(lit); len(got) != 1 || got[0] != good {
		t.Errorf("LITERAL orders = %v", got)
	}
	del := all
	del.Principal = "User:bob"
	deleted, err := store.Delete(del)
	if err != nil || len(deleted) != 1 || len(deleted[0]) != 1 || deleted[0][0] != pre {
		t.Fatalf("Delete = %v, %v", deleted, err)
	}
	if got, _ := store.List(all); len(got) != 1 {
		t.Errorf("after Delete: %v", got)
	}
	if _, err := store.Delete(acl.Filter{}); !errors.Is(err, acl.ErrInvalid) {
		t.Errorf("an invalid filter: %v", err)
	}
}

func TestParse(t *testing.T) {
	for in, want := range map[string]acl.Operation{"read": acl.Read, "DESCRIBE_CONFIGS": acl.DescribeConfigs, "describe-configs": acl.DescribeConfigs, "IdempotentWrite": acl.IdempotentWrite, "all": acl.All} {
		if got, err := acl.ParseOperation(in); err != nil || got != want {
			t.Errorf("ParseOperation(%q) = %v, %v", in, got, err)
		}
	}
	if rt, err := acl.ParseResourceType("transactional-id"); err != nil || rt != acl.TransactionalID {
		t.Errorf("transactional-id: %v, %v", rt, err)
	}
	if _, err := acl.ParseOperation("fly"); !errors.Is(err, acl.ErrInvalid) {
		t.Errorf("fly: %v", err)
	}
}

// AllowedAny is Kafka's authorizeByResourceType: an ALLOW somewhere that
// no DENY covers entirely.
func TestAuthorizer_AllowedAny(t *testing.T) {
	tests := []struct {
		name     string
		bindings []acl.Binding
		want     bool
	}{
		{"nothing", nil, false},
		{"a literal", []acl.Binding{allow(acl.Topic, "orders", acl.Literal, "User:app", acl.Write)}, true},
		{"All counts", []acl.Binding{allow(acl.Topic, "orders", acl.Literal, "User:app", acl.All)}, true},
		{"Read is not Write", []acl.Binding{allow(acl.Topic, "orders", acl.Literal, "User:app", acl.Read)}, false},
		{"another principal", []acl.Binding{allow(acl.Topic, "orders", acl.Literal, "User:other", acl.Write)}, false},
		{"User:*", []acl.Binding{allow(acl.Topic, "orders", acl.Literal, "User:*", acl.Write)}, true},
		{"a group is not a topic", []acl.Binding{allow(acl.Group, "orders", acl.Literal, "User:app", acl.Read)}, false},
		{"the same literal denied", []acl.Binding{
			allow(acl.Topic, "orders", acl.Literal, "User:app", acl.Write),
			deny(allow(acl.Topic, "orders", acl.Literal, "User:app", acl.Write))}, false},
		{"another literal denied", []acl.Binding{
			allow(acl.Topic, "orders", acl.Literal, "User:app", acl.Write),
			deny(allow(acl.Topic, "billing", acl.Literal, "User:app", acl.Write))}, true},
		{"a deny of *", []acl.Binding{
			allow(acl.Topic, "orders", acl.Literal, "User:app", acl.Write),
			deny(allow(acl.Topic, "*", acl.Literal, "User:app", acl.All))}, false},
		{"a deny prefix covers the literal", []acl.Binding{
			allow(acl.Topic, "orders", acl.Literal, "User:app", acl.Write),
			deny(allow(acl.Topic, "ord", acl.Prefixed, "User:app", acl.Write))}, false},
		{"a deny prefix covers the longer prefix", []acl.Binding{
			allow(acl.Topic, "orders-", acl.Prefixed, "User:app", acl.Write),
			deny(allow(acl.Topic, "ord", acl.Prefixed, "User:app", acl.Write))}, false},
		{"a longer deny prefix leaves the rest", []acl.Binding{
			allow(acl.Topic, "ord", acl.Prefixed, "User:app", acl.Write),
			deny(allow(acl.Topic, "orders-", acl.Prefixed, "User:app", acl.Write))}, true},
		{"an allow of * survives a deny prefix", []acl.Binding{
			allow(acl.Topic, "*", acl.Literal, "User:app", acl.Write),
			deny(allow(acl.Topic, "a", acl.Prefixed, "User:app", acl.Write))}, true},
		{"a deny of another operation", []acl.Binding{
			allow(acl.Topic, "orders", acl.Literal, "User:app", acl.Write),
			deny(allow(acl.Topic, "orders", acl.Literal, "User:app", acl.Read))}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store, _ := acl.OpenStore(t.TempDir())
			if len(tt.bindings) > 0 {
				if err := store.Add(tt.bindings...); err != nil {
					t.Fatal(err)
				}
			}
			a := acl.NewAuthorizer(store, []string{"User:admin"}, nil)
			if got := a.AllowedAny("User:app", "127.0.0.1", acl.Write, acl.Topic); got != tt.want {
				t.Errorf("AllowedAny = %v, want %v", got, tt.want)
			}
			if !a.AllowedAny("User:admin", "127.0.0.1", acl.Write, acl.Topic) {
				t.Error("a super user is refused")
			}
		})
	}
}

// BenchmarkAllowed asks, as an all-topics Metadata does, about one of
// many topics with many ACLs: the index makes it cost what the ACLs of
// that topic cost, not all of them.
func BenchmarkAllowed(b *testing.B) {
	for _, n := range []int{10, 1_000, 10_000} {
		b.Run(fmt.Sprintf("acls=%d", n), func(b *testing.B) {
			store, _ := acl.OpenStore(b.TempDir())
			var bs []acl.Binding
			for i := range n {
				bs = append(bs, allow(acl.Topic, fmt.Sprintf("topic-%d", i), acl.Literal, fmt.Sprintf("User:u%d", i%50), acl.Read))
			}
			bs = append(bs, allow(acl.Topic, "topic-", acl.Prefixed, "User:reader", acl.Describe))
			if err := store.Add(bs...); err != nil {
				b.Fatal(err)
			}
			a := acl.NewAuthorizer(store, nil, nil)
			b.ResetTimer()
			for i := range b.N {
				if !a.Allowed("User:reader", "127.0.0.1", acl.Describe, acl.Topic, fmt.Sprintf("topic-%d", i%n)) {
					b.Fatal("denied")
				}
			}
		})
	}
}

// A damaged ACL file fails closed: every request but super users' is
// denied until it is repaired, and List says which file and where.
func TestAuthorizer_DamagedFileFailsClosed(t *testing.T) {
	dir := t.TempDir()
	store, _ := acl.OpenStore(dir)
	if err := store.Add(allow(acl.Topic, "orders", acl.Literal, "User:alice", acl.Read)); err != nil {
		t.Fatal(err)
	}
	a := acl.NewAuthorizer(store, []string{"User:admin"}, nil)
	if !a.Allowed("User:alice", "127.0.0.1", acl.Read, acl.Topic, "orders") {
		t.Fatal("alice may not read before the damage")
	}
	if err := os.WriteFile(store.Path(), []byte(`{"acls": [{"resource_type": 2,`), 0o600); err != nil {
		t.Fatal(err)
	}
	time.Sleep(jsonfile.Recheck)
	if a.Allowed("User:alice", "127.0.0.1", acl.Read, acl.Topic, "orders") {
		t.Error("a damaged ACL file still allows what it allowed")
	}
	if !a.Allowed("User:admin", "127.0.0.1", acl.Read, acl.Topic, "orders") {
		t.Error("a super user is denied by a damaged ACL file")
	}
	all := acl.Filter{ResourceType: acl.ResourceAny, Pattern: acl.PatternAny, Operation: acl.OpAny, Permission: acl.PermissionAny}
	if _, err := store.List(all); err == nil || !strings.Contains(err.Error(), store.Path()) {
		t.Errorf("List of a damaged file: %v, want an error naming %s", err, store.Path())
	}
}
