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
// (KIP-679); the rule is acl.Authorizer.AllowedAny's.
func (c *conn) mayWriteSomeTopic() bool {
	return c.s.o.Authorizer.AllowedAny(c.principal, c.ip, acl.Write, acl.Topic)
}
