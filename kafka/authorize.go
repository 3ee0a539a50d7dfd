package kafka

// Authorization: every handler asks Options.Authorizer what Kafka 4's
// KafkaApis asks, with the connection's principal and its client's IP
// address as the host (docs/kafka.md, "Security", lists each API's
// checks). A denial is an error code in the response — TOPIC_, GROUP_,
// CLUSTER_ or TRANSACTIONAL_ID_AUTHORIZATION_FAILED — never a dropped
// connection; it is counted by API
// (passbook_kafka_authorization_denied_total) and logged at info level,
// at most once per 10 seconds per API. A nil Authorizer allows
// everything. Checks that only filter what a client sees (the topics of
// an all-topics Metadata, the groups of ListGroups) are neither counted
// nor logged, as Kafka logs them neither.

import (
	"log/slog"

	"github.com/passbook-log/passbook/acl"
)

// allowed reports whether the connection may do op on the resource,
// counting and logging a denial against the request's API.
func (c *conn) allowed(op acl.Operation, rt acl.ResourceType, name string) bool {
	if c.may(op, rt, name) {
		return true
	}
	c.s.sec.denied[c.api].Add(1)
	c.s.rateLog(slog.LevelInfo, "denied_"+c.api.Name(), "kafka: denied by the ACLs",
		"principal", c.principal, "host", c.ip, "api", c.api.Name(), "operation", op.String(), "resource", rt.String()+":"+name)
	return false
}

// may is allowed without counting or logging a denial.
func (c *conn) may(op acl.Operation, rt acl.ResourceType, name string) bool {
	return c.s.o.Authorizer.Allowed(c.principal, c.ip, op, rt, name)
}

// allowedCluster is allowed on the cluster resource.
func (c *conn) allowedCluster(op acl.Operation) bool {
	return c.allowed(op, acl.Cluster, acl.ClusterName)
}

// mayCluster is may on the cluster resource.
func (c *conn) mayCluster(op acl.Operation) bool { return c.may(op, acl.Cluster, acl.ClusterName) }

// The operations each resource type supports, as Kafka's
// AclEntry.supportedOperations lists them: the bits of an
// authorized_operations field.
var (
	topicOperations   = []acl.Operation{acl.Read, acl.Write, acl.Create, acl.Delete, acl.Alter, acl.Describe, acl.DescribeConfigs, acl.AlterConfigs}
	groupOperations   = []acl.Operation{acl.Read, acl.Describe, acl.Delete}
	clusterOperations = []acl.Operation{acl.Create, acl.ClusterAction, acl.DescribeConfigs, acl.AlterConfigs, acl.IdempotentWrite, acl.Alter, acl.Describe}
)

// authorizedOperations is the bit field of the operations the
// connection may do on a resource: bit n for the operation of code n,
// as Kafka's Utils.to32BitField.
func (c *conn) authorizedOperations(rt acl.ResourceType, name string) int32 {
	ops := topicOperations
	switch rt {
	case acl.Group:
		ops = groupOperations
	case acl.Cluster:
		ops = clusterOperations
	}
	var bits int32
	for _, op := range ops {
		if c.may(op, rt, name) {
			bits |= 1 << op
		}
	}
	return bits
}

// mayWriteSomeTopic reports whether the connection may Write some topic
// — Kafka's authorizeByResourceType(WRITE, TOPIC), which Kafka 4 asks of
// an idempotent producer without IDEMPOTENT_WRITE on the cluster
// (KIP-679). It holds when an ALLOW of Write (or All) on topics matches
// the principal (or User:*) and the host (or *) and no DENY covers what
// it allows: a DENY of the literal "*" covers everything, a DENY
// literal covers the same literal, and a DENY prefix covers the
// literals and prefixes it starts.
func (c *conn) mayWriteSomeTopic() bool {
	a := c.s.o.Authorizer
	if a == nil || a.SuperUser(c.principal) {
		return true
	}
	bindings, err := a.Store().List(acl.Filter{ResourceType: acl.Topic, Pattern: acl.PatternAny, Operation: acl.OpAny, Permission: acl.PermissionAny})
	if err != nil {
		c.s.rateLog(slog.LevelWarn, "acl_list", "kafka: ACLs unreadable: denying", "err", err)
		return false
	}
	var allowLiterals, allowPrefixes, denyLiterals, denyPrefixes []string
	for _, b := range bindings {
		if b.Principal != c.principal && b.Principal != "User:"+acl.Wildcard ||
			b.Host != c.ip && b.Host != acl.Wildcard ||
			b.Operation != acl.Write && b.Operation != acl.All {
			continue
		}
		switch {
		case b.Permission == acl.Deny && b.Pattern == acl.Literal:
			denyLiterals = append(denyLiterals, b.Name)
		case b.Permission == acl.Deny && b.Pattern == acl.Prefixed:
			denyPrefixes = append(denyPrefixes, b.Name)
		case b.Permission == acl.Allow && b.Pattern == acl.Literal:
			allowLiterals = append(allowLiterals, b.Name)
		case b.Permission == acl.Allow && b.Pattern == acl.Prefixed:
			allowPrefixes = append(allowPrefixes, b.Name)
		}
	}
	for _, d := range denyLiterals {
		if d == acl.Wildcard {
			return false
		}
	}
	deniedByPrefix := func(name string) bool {
		for _, d := range denyPrefixes {
			if len(name) >= len(d) && name[:len(d)] == d {
				return true
			}
		}
		return false
	}
	for _, p := range allowPrefixes {
		if !deniedByPrefix(p) {
			return true
		}
	}
	for _, l := range allowLiterals {
		if l == acl.Wildcard {
			return true
		}
		denied := deniedByPrefix(l)
		for _, d := range denyLiterals {
			denied = denied || d == l
		}
		if !denied {
			return true
		}
	}
	return false
}
