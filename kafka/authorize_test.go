package kafka

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/passbook-log/passbook/acl"
	"github.com/passbook-log/passbook/auth"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// aclWorld is a server with SASL and ACLs, its topics (orders,
// orders-eu, other) and a group g1 with a committed offset, and clients
// for alice (whose rights the cases set) and admin (a super user).
type aclWorld struct {
	ts           *testServer
	store        *acl.Store
	alice, admin *kgo.Client
	n            atomic.Int64 // for fresh names
}

func newACLWorld(t *testing.T) *aclWorld {
	o := saslOptions(t)
	o.Authorizer = authorizer(t)
	ts := startServer(t, o)
	for _, name := range []string{"orders", "orders-eu", "other"} {
		ts.createTopic(t, name, 1)
	}
	w := &aclWorld{ts: ts, store: o.Authorizer.Store()}
	w.alice = ts.plainClient(t, "alice", kgo.RequestRetries(0), byName())
	w.admin = ts.plainClient(t, "admin", byName())
	w.commit(t, w.admin, "g1", "orders")
	return w
}

// byName caps franz-go at the newest versions that name topics by name
// (Produce and Fetch 12, OffsetCommit and OffsetFetch 9, DeleteTopics
// 5): the matrix's requests name topics, and franz-go sends a request at
// the newest version both sides have. The versions that name topics by
// ID reach the same checks under the names topicids.go finds for the
// IDs (TestTopicIDs_NewestVersions).
func byName() kgo.Opt {
	v := kversion.Stable()
	for key, max := range map[kmsg.Key]int16{kmsg.Produce: 12, kmsg.Fetch: 12, kmsg.OffsetCommit: 9, kmsg.OffsetFetch: 9, kmsg.DeleteTopics: 5} {
		v.SetMaxKeyVersion(int16(key), max)
	}
	return kgo.MaxVersions(v)
}

func (w *aclWorld) fresh(prefix string) string { return fmt.Sprintf("%s-%d", prefix, w.n.Add(1)) }

// grant replaces every ACL with bs.
func (w *aclWorld) grant(t *testing.T, bs ...acl.Binding) {
	t.Helper()
	if _, err := w.store.Delete(acl.Filter{ResourceType: acl.ResourceAny, Pattern: acl.PatternAny, Operation: acl.OpAny, Permission: acl.PermissionAny}); err != nil {
		t.Fatal(err)
	}
	if len(bs) > 0 {
		if err := w.store.Add(bs...); err != nil {
			t.Fatal(err)
		}
	}
}

// commit commits offset 1 of topic's partition 0 for group, as a plain
// (generation −1) commit, and returns the partition's error code.
func (w *aclWorld) commit(t *testing.T, cl *kgo.Client, group, topic string) int16 {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version, req.Group, req.Generation = 8, group, -1
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset = 0, 1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return seedRequest[*kmsg.OffsetCommitResponse](t, cl, req).Topics[0].Partitions[0].ErrorCode
}

// offsetFetch fetches g1's offsets of partition 0 of topics (nil: of
// every topic). franz-go sends the highest version both sides know: v8+,
// groups in a list.
func (w *aclWorld) offsetFetch(t *testing.T, topics []string) kmsg.OffsetFetchResponseGroup {
	req := kmsg.NewPtrOffsetFetchRequest()
	g := kmsg.NewOffsetFetchRequestGroup()
	g.Group = "g1"
	for _, topic := range topics {
		rt := kmsg.NewOffsetFetchRequestGroupTopic()
		rt.Topic, rt.Partitions = topic, []int32{0}
		g.Topics = append(g.Topics, rt)
	}
	req.Groups = append(req.Groups, g)
	return seedRequest[*kmsg.OffsetFetchResponse](t, w.alice, req).Groups[0]
}

// aclOps are the requests of the matrix, each returning the error code
// that says whether alice was allowed. Where the answer is a list that
// leaves out what she may not see, "denied" is TOPIC_ or
// GROUP_AUTHORIZATION_FAILED standing for "not listed".
var aclOps = map[string]func(t *testing.T, w *aclWorld) int16{
	"Produce orders": func(t *testing.T, w *aclWorld) int16 {
		resp := seedRequest[*kmsg.ProduceResponse](t, w.alice, produceRequest(9, -1, "orders", 0, testBatch(t, 1, 10)))
		return resp.Topics[0].Partitions[0].ErrorCode
	},
	"Produce orders, transactional": func(t *testing.T, w *aclWorld) int16 {
		req := produceRequest(9, -1, "orders", 0, testBatch(t, 1, 10))
		req.TransactionID = kmsg.StringPtr("tx-1")
		return seedRequest[*kmsg.ProduceResponse](t, w.alice, req).Topics[0].Partitions[0].ErrorCode
	},
	"Fetch orders": func(t *testing.T, w *aclWorld) int16 {
		req := kmsg.NewPtrFetchRequest()
		req.Version, req.MaxWaitMillis, req.MaxBytes, req.ReplicaID = 11, 0, 1<<20, -1
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = "orders"
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.PartitionMaxBytes = 1 << 20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return seedRequest[*kmsg.FetchResponse](t, w.alice, req).Topics[0].Partitions[0].ErrorCode
	},
	"ListOffsets orders": func(t *testing.T, w *aclWorld) int16 {
		req := kmsg.NewPtrListOffsetsRequest()
		req.Version = 7
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = "orders"
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Timestamp = -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return seedRequest[*kmsg.ListOffsetsResponse](t, w.alice, req).Topics[0].Partitions[0].ErrorCode
	},
	"Metadata orders": func(t *testing.T, w *aclWorld) int16 {
		req := kmsg.NewPtrMetadataRequest()
		req.Version = 12
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr("orders")
		req.Topics = append(req.Topics, rt)
		return seedRequest[*kmsg.MetadataResponse](t, w.alice, req).Topics[0].ErrorCode
	},
	"Metadata, all topics, lists orders": func(t *testing.T, w *aclWorld) int16 {
		req := kmsg.NewPtrMetadataRequest()
		req.Version = 12
		resp := seedRequest[*kmsg.MetadataResponse](t, w.alice, req)
		if slices.ContainsFunc(resp.Topics, func(mt kmsg.MetadataResponseTopic) bool { return *mt.Topic == "orders" }) {
			return 0
		}
		return kerr.TopicAuthorizationFailed.Code
	},
	"Metadata auto-creates fresh-N": func(t *testing.T, w *aclWorld) int16 {
		req := kmsg.NewPtrMetadataRequest()
		req.Version, req.AllowAutoTopicCreation = 12, true
		rt := kmsg.NewMetadataRequestTopic()
		name := w.fresh("fresh")
		rt.Topic = &name
		req.Topics = append(req.Topics, rt)
		code := seedRequest[*kmsg.MetadataResponse](t, w.alice, req).Topics[0].ErrorCode
		if _, err := w.ts.db.Topic(name); (err == nil) != (code == 0) {
			t.Fatalf("error %d but topic exists: %v", code, err == nil)
		}
		return code
	},
	"OffsetCommit g1 orders": func(t *testing.T, w *aclWorld) int16 {
		return w.commit(t, w.alice, "g1", "orders")
	},
	"OffsetFetch g1 orders": func(t *testing.T, w *aclWorld) int16 {
		g := w.offsetFetch(t, []string{"orders"})
		if g.ErrorCode != 0 {
			return g.ErrorCode
		}
		p := g.Topics[0].Partitions[0]
		if p.ErrorCode == 0 && p.Offset != 1 {
			t.Fatalf("committed offset %d, want 1", p.Offset)
		}
		return p.ErrorCode
	},
	"OffsetFetch g1, all topics, lists orders": func(t *testing.T, w *aclWorld) int16 {
		g := w.offsetFetch(t, nil)
		if g.ErrorCode != 0 {
			return g.ErrorCode
		}
		if len(g.Topics) == 1 && g.Topics[0].Topic == "orders" {
			return 0
		}
		return kerr.TopicAuthorizationFailed.Code
	},
	"FindCoordinator g1": func(t *testing.T, w *aclWorld) int16 {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.Version, req.CoordinatorKeys = 4, []string{"g1"}
		return seedRequest[*kmsg.FindCoordinatorResponse](t, w.alice, req).Coordinators[0].ErrorCode
	},
	"JoinGroup g1": func(t *testing.T, w *aclWorld) int16 {
		req := kmsg.NewPtrJoinGroupRequest()
		req.Version, req.Group, req.SessionTimeoutMillis, req.RebalanceTimeoutMillis, req.ProtocolType = 9, "g1", 10_000, 10_000, "consumer"
		p := kmsg.NewJoinGroupRequestProtocol()
		p.Name = "range"
		req.Protocols = append(req.Protocols, p)
		return seedRequest[*kmsg.JoinGroupResponse](t, w.alice, req).ErrorCode
	},
	"Heartbeat g1": func(t *testing.T, w *aclWorld) int16 {
		req := kmsg.NewPtrHeartbeatRequest()
		req.Version, req.Group, req.MemberID = 4, "g1", "nobody"
		return seedRequest[*kmsg.HeartbeatResponse](t, w.alice, req).ErrorCode
	},
	"SyncGroup g1": func(t *testing.T, w *aclWorld) int16 {
		req := kmsg.NewPtrSyncGroupRequest()
		req.Version, req.Group, req.MemberID = 5, "g1", "nobody"
		return seedRequest[*kmsg.SyncGroupResponse](t, w.alice, req).ErrorCode
	},
	"LeaveGroup g1": func(t *testing.T, w *aclWorld) int16 {
		req := kmsg.NewPtrLeaveGroupRequest()
		req.Version, req.Group = 5, "g1"
		return seedRequest[*kmsg.LeaveGroupResponse](t, w.alice, req).ErrorCode
	},
	"DescribeGroups g1": func(t *testing.T, w *aclWorld) int16 {
		req := kmsg.NewPtrDescribeGroupsRequest()
		req.Version, req.Groups, req.IncludeAuthorizedOperations = 5, []string{"g1"}, true
		g := seedRequest[*kmsg.DescribeGroupsResponse](t, w.alice, req).Groups[0]
		if g.ErrorCode == 0 && g.AuthorizedOperations&(1<<acl.Describe) == 0 {
			t.Fatalf("authorized operations %b lack DESCRIBE", g.AuthorizedOperations)
		}
		return g.ErrorCode
	},
	"ListGroups lists g1": func(t *testing.T, w *aclWorld) int16 {
		req := kmsg.NewPtrListGroupsRequest()
		req.Version = 4
		resp := seedRequest[*kmsg.ListGroupsResponse](t, w.alice, req)
		if slices.ContainsFunc(resp.Groups, func(g kmsg.ListGroupsResponseGroup) bool { return g.Group == "g1" }) {
			return 0
		}
		return kerr.GroupAuthorizationFailed.Code
	},
	"DeleteGroups gone-N": func(t *testing.T, w *aclWorld) int16 {
		group := w.fresh("gone")
		w.commit(t, w.admin, group, "orders")
		req := kmsg.NewPtrDeleteGroupsRequest()
		req.Version, req.Groups = 2, []string{group}
		return seedRequest[*kmsg.DeleteGroupsResponse](t, w.alice, req).Groups[0].ErrorCode
	},
	"CreateTopics new-N": func(t *testing.T, w *aclWorld) int16 {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.Version = 7
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = w.fresh("new"), 1, 1
		req.Topics = append(req.Topics, rt)
		return seedRequest[*kmsg.CreateTopicsResponse](t, w.alice, req).Topics[0].ErrorCode
	},
	"CreateTopics new-N, its configs in the response": func(t *testing.T, w *aclWorld) int16 {
		req := kmsg.NewPtrCreateTopicsRequest()
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = w.fresh("new"), 2, 1
		req.Topics = append(req.Topics, rt)
		ct := seedRequest[*kmsg.CreateTopicsResponse](t, w.alice, req).Topics[0]
		if ct.ErrorCode != 0 {
			t.Fatalf("create: error %d", ct.ErrorCode)
		}
		if shown := len(ct.Configs) > 0 && ct.NumPartitions == 2; shown != (ct.ConfigErrorCode == 0) {
			t.Fatalf("config error %d with %d configs and %d partitions", ct.ConfigErrorCode, len(ct.Configs), ct.NumPartitions)
		}
		return ct.ConfigErrorCode
	},
	"DeleteTopics doomed-N": func(t *testing.T, w *aclWorld) int16 {
		name := w.fresh("doomed")
		w.ts.createTopic(t, name, 1)
		req := kmsg.NewPtrDeleteTopicsRequest()
		req.Version, req.TopicNames = 5, []string{name}
		code := seedRequest[*kmsg.DeleteTopicsResponse](t, w.alice, req).Topics[0].ErrorCode
		if _, err := w.ts.db.Topic(name); (err != nil) != (code == 0) {
			t.Fatalf("error %d but topic deleted: %v", code, err != nil)
		}
		return code
	},
	"InitProducerID, idempotent": func(t *testing.T, w *aclWorld) int16 {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.Version = 4
		return seedRequest[*kmsg.InitProducerIDResponse](t, w.alice, req).ErrorCode
	},
	"DescribeConfigs topic orders": func(t *testing.T, w *aclWorld) int16 {
		req := kmsg.NewPtrDescribeConfigsRequest()
		req.Version = 4
		r := kmsg.NewDescribeConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, "orders"
		req.Resources = append(req.Resources, r)
		return seedRequest[*kmsg.DescribeConfigsResponse](t, w.alice, req).Resources[0].ErrorCode
	},
	"IncrementalAlterConfigs topic orders": func(t *testing.T, w *aclWorld) int16 {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		r := kmsg.NewIncrementalAlterConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, "orders"
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value = "retention.ms", kmsg.StringPtr("3600000")
		r.Configs = append(r.Configs, c)
		req.Resources = append(req.Resources, r)
		return seedRequest[*kmsg.IncrementalAlterConfigsResponse](t, w.alice, req).Resources[0].ErrorCode
	},
	"AlterConfigs broker": func(t *testing.T, w *aclWorld) int16 {
		req := kmsg.NewPtrAlterConfigsRequest()
		r := kmsg.NewAlterConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeBroker, "0"
		c := kmsg.NewAlterConfigsRequestResourceConfig()
		c.Name, c.Value = "log.retention.ms", kmsg.StringPtr("3600000")
		r.Configs = append(r.Configs, c)
		req.Resources = append(req.Resources, r)
		return seedRequest[*kmsg.AlterConfigsResponse](t, w.alice, req).Resources[0].ErrorCode
	},
	"DescribeConfigs broker": func(t *testing.T, w *aclWorld) int16 {
		req := kmsg.NewPtrDescribeConfigsRequest()
		req.Version = 4
		r := kmsg.NewDescribeConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeBroker, "0"
		req.Resources = append(req.Resources, r)
		return seedRequest[*kmsg.DescribeConfigsResponse](t, w.alice, req).Resources[0].ErrorCode
	},
	"DescribeAcls": func(t *testing.T, w *aclWorld) int16 {
		req := kmsg.NewPtrDescribeACLsRequest()
		req.Version, req.ResourceType, req.ResourcePatternType, req.Operation, req.PermissionType = 3, kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny, kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		return seedRequest[*kmsg.DescribeACLsResponse](t, w.alice, req).ErrorCode
	},
	"CreateAcls": func(t *testing.T, w *aclWorld) int16 {
		req := kmsg.NewPtrCreateACLsRequest()
		req.Version = 3
		c := kmsg.NewCreateACLsRequestCreation()
		c.ResourceType, c.ResourceName, c.ResourcePatternType = kmsg.ACLResourceTypeTopic, "made-by-alice", kmsg.ACLResourcePatternTypeLiteral
		c.Principal, c.Host, c.Operation, c.PermissionType = "User:bob", "*", kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow
		req.Creations = append(req.Creations, c)
		return seedRequest[*kmsg.CreateACLsResponse](t, w.alice, req).Results[0].ErrorCode
	},
	"DeleteAcls": func(t *testing.T, w *aclWorld) int16 {
		req := kmsg.NewPtrDeleteACLsRequest()
		req.Version = 3
		f := kmsg.NewDeleteACLsRequestFilter()
		f.ResourceType, f.ResourcePatternType, f.Operation, f.PermissionType = kmsg.ACLResourceTypeTopic, kmsg.ACLResourcePatternTypeAny, kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		f.Principal = kmsg.StringPtr("User:nobody")
		req.Filters = append(req.Filters, f)
		return seedRequest[*kmsg.DeleteACLsResponse](t, w.alice, req).Results[0].ErrorCode
	},
	"DescribeUserScramCredentials": func(t *testing.T, w *aclWorld) int16 {
		return seedRequest[*kmsg.DescribeUserSCRAMCredentialsResponse](t, w.alice, kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()).ErrorCode
	},
	"AlterUserScramCredentials": func(t *testing.T, w *aclWorld) int16 {
		req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
		salted, err := auth.SaltedPassword(auth.SCRAMSHA256, []byte("carol-secret"), []byte("salt-of-carol"), 4096)
		if err != nil {
			t.Fatal(err)
		}
		u := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
		u.Name, u.Mechanism, u.Iterations, u.Salt, u.SaltedPassword = "carol", 1, 4096, []byte("salt-of-carol"), salted
		req.Upsertions = append(req.Upsertions, u)
		return seedRequest[*kmsg.AlterUserSCRAMCredentialsResponse](t, w.alice, req).Results[0].ErrorCode
	},
}

// ACL bindings for the matrix: alice from any host unless a case says.
func allow(rt acl.ResourceType, pt acl.PatternType, name string, op acl.Operation) acl.Binding {
	return acl.Binding{ResourceType: rt, Name: name, Pattern: pt, Principal: "User:alice", Host: "*", Operation: op, Permission: acl.Allow}
}

func deny(rt acl.ResourceType, pt acl.PatternType, name string, op acl.Operation) acl.Binding {
	b := allow(rt, pt, name, op)
	b.Permission = acl.Deny
	return b
}

func withPrincipal(b acl.Binding, p string) acl.Binding { b.Principal = p; return b }
func withHost(b acl.Binding, h string) acl.Binding      { b.Host = h; return b }

func topicACL(pt acl.PatternType, name string, op acl.Operation) acl.Binding {
	return allow(acl.Topic, pt, name, op)
}
func groupACL(name string, op acl.Operation) acl.Binding {
	return allow(acl.Group, acl.Literal, name, op)
}
func clusterACL(op acl.Operation) acl.Binding {
	return allow(acl.Cluster, acl.Literal, acl.ClusterName, op)
}

// TestACL_Matrix: for each API, what Kafka 4 asks, with alice allowed
// and denied by literal, prefixed and wildcard ACLs, User:* and hosts,
// and deny winning over allow. Every denial is an error code on a
// connection that stays open.
func TestACL_Matrix(t *testing.T) {
	const (
		ok      = 0
		topicNo = 29 // TOPIC_AUTHORIZATION_FAILED
		groupNo = 30 // GROUP_AUTHORIZATION_FAILED
		clustNo = 31 // CLUSTER_AUTHORIZATION_FAILED
		txnNo   = 53 // TRANSACTIONAL_ID_AUTHORIZATION_FAILED
	)
	L, P := acl.Literal, acl.Prefixed
	for _, code := range []struct {
		code int16
		err  *kerr.Error
	}{{topicNo, kerr.TopicAuthorizationFailed}, {groupNo, kerr.GroupAuthorizationFailed}, {clustNo, kerr.ClusterAuthorizationFailed}, {txnNo, kerr.TransactionalIDAuthorizationFailed}} {
		if code.code != code.err.Code {
			t.Fatalf("%s is %d", code.err.Message, code.err.Code)
		}
	}
	w := newACLWorld(t)
	produceDenials := 0
	for _, tc := range []struct {
		op   string
		name string
		acls []acl.Binding
		want int16
	}{
		// Produce: Write on the topic.
		{"Produce orders", "no ACL", nil, topicNo},
		{"Produce orders", "literal Write", []acl.Binding{topicACL(L, "orders", acl.Write)}, ok},
		{"Produce orders", "prefixed Write", []acl.Binding{topicACL(P, "ord", acl.Write)}, ok},
		{"Produce orders", "a prefix it does not start", []acl.Binding{topicACL(P, "orders-", acl.Write)}, topicNo},
		{"Produce orders", "All on every topic", []acl.Binding{topicACL(L, "*", acl.All)}, ok},
		{"Produce orders", "Read is not Write", []acl.Binding{topicACL(L, "orders", acl.Read)}, topicNo},
		{"Produce orders", "User:*", []acl.Binding{withPrincipal(topicACL(L, "orders", acl.Write), "User:*")}, ok},
		{"Produce orders", "another principal", []acl.Binding{withPrincipal(topicACL(L, "orders", acl.Write), "User:bob")}, topicNo},
		{"Produce orders", "the client's host", []acl.Binding{withHost(topicACL(L, "orders", acl.Write), "127.0.0.1")}, ok},
		{"Produce orders", "another host", []acl.Binding{withHost(topicACL(L, "orders", acl.Write), "10.0.0.1")}, topicNo},
		{"Produce orders", "deny prefixed over allow literal", []acl.Binding{topicACL(L, "orders", acl.Write), deny(acl.Topic, P, "or", acl.Write)}, topicNo},
		{"Produce orders", "deny Write over allow All", []acl.Binding{topicACL(L, "*", acl.All), deny(acl.Topic, L, "orders", acl.Write)}, topicNo},
		{"Produce orders", "deny for User:* over allow", []acl.Binding{topicACL(L, "orders", acl.Write), withPrincipal(deny(acl.Topic, L, "*", acl.All), "User:*")}, topicNo},
		{"Produce orders", "deny from another host does not apply", []acl.Binding{topicACL(L, "orders", acl.Write), withHost(deny(acl.Topic, L, "orders", acl.Write), "10.0.0.1")}, ok},
		{"Produce orders, transactional", "Write on the topic, not the transactional id", []acl.Binding{topicACL(L, "orders", acl.Write)}, txnNo},

		// Fetch: Read on the topic.
		{"Fetch orders", "no ACL", nil, topicNo},
		{"Fetch orders", "Read", []acl.Binding{topicACL(L, "orders", acl.Read)}, ok},
		{"Fetch orders", "Write is not Read", []acl.Binding{topicACL(L, "orders", acl.Write)}, topicNo},
		{"Fetch orders", "Read on another topic", []acl.Binding{topicACL(L, "other", acl.Read)}, topicNo},

		// ListOffsets and Metadata: Describe on the topic, implied by Read, Write, Delete, Alter.
		{"ListOffsets orders", "no ACL", nil, topicNo},
		{"ListOffsets orders", "Read implies Describe", []acl.Binding{topicACL(L, "orders", acl.Read)}, ok},
		{"Metadata orders", "no ACL", nil, topicNo},
		{"Metadata orders", "Describe", []acl.Binding{topicACL(L, "orders", acl.Describe)}, ok},
		{"Metadata orders", "Write implies Describe", []acl.Binding{topicACL(P, "orders", acl.Write)}, ok},
		{"Metadata orders", "Delete implies Describe", []acl.Binding{topicACL(L, "orders", acl.Delete)}, ok},
		{"Metadata orders", "Create does not", []acl.Binding{topicACL(L, "orders", acl.Create)}, topicNo},
		{"Metadata orders", "deny Describe over allow Read", []acl.Binding{topicACL(L, "orders", acl.Read), deny(acl.Topic, L, "orders", acl.Describe)}, topicNo},
		{"Metadata, all topics, lists orders", "no ACL", nil, topicNo},
		{"Metadata, all topics, lists orders", "prefixed Describe", []acl.Binding{topicACL(P, "ord", acl.Describe)}, ok},
		{"Metadata auto-creates fresh-N", "Describe without Create", []acl.Binding{topicACL(L, "*", acl.Describe)}, topicNo},
		{"Metadata auto-creates fresh-N", "Create on the cluster", []acl.Binding{topicACL(L, "*", acl.Describe), clusterACL(acl.Create)}, ok},
		{"Metadata auto-creates fresh-N", "Create on the topic", []acl.Binding{topicACL(L, "*", acl.Describe), topicACL(P, "fresh", acl.Create)}, ok},

		// Group APIs.
		{"OffsetCommit g1 orders", "no ACL", nil, groupNo},
		{"OffsetCommit g1 orders", "Read on the topic only", []acl.Binding{topicACL(L, "orders", acl.Read)}, groupNo},
		{"OffsetCommit g1 orders", "Read on the group only", []acl.Binding{groupACL("g1", acl.Read)}, topicNo},
		{"OffsetCommit g1 orders", "Read on both", []acl.Binding{groupACL("g1", acl.Read), topicACL(L, "orders", acl.Read)}, ok},
		{"OffsetCommit g1 orders", "prefixed group", []acl.Binding{allow(acl.Group, P, "g", acl.Read), topicACL(L, "orders", acl.Read)}, ok},
		{"OffsetFetch g1 orders", "no ACL", nil, groupNo},
		{"OffsetFetch g1 orders", "Describe on the group only", []acl.Binding{groupACL("g1", acl.Describe)}, topicNo},
		{"OffsetFetch g1 orders", "Describe on both", []acl.Binding{groupACL("g1", acl.Describe), topicACL(L, "orders", acl.Describe)}, ok},
		{"OffsetFetch g1, all topics, lists orders", "Describe on the group only", []acl.Binding{groupACL("g1", acl.Describe)}, topicNo},
		{"OffsetFetch g1, all topics, lists orders", "Describe on both", []acl.Binding{groupACL("g1", acl.Describe), topicACL(L, "orders", acl.Describe)}, ok},
		{"FindCoordinator g1", "no ACL", nil, groupNo},
		{"FindCoordinator g1", "Read implies Describe", []acl.Binding{groupACL("g1", acl.Read)}, ok},
		{"JoinGroup g1", "Describe is not Read", []acl.Binding{groupACL("g1", acl.Describe)}, groupNo},
		{"JoinGroup g1", "Read", []acl.Binding{groupACL("g1", acl.Read)}, kerr.MemberIDRequired.Code},
		{"Heartbeat g1", "no ACL", nil, groupNo},
		{"Heartbeat g1", "Read", []acl.Binding{groupACL("g1", acl.Read)}, kerr.UnknownMemberID.Code},
		{"SyncGroup g1", "no ACL", nil, groupNo},
		{"SyncGroup g1", "Read", []acl.Binding{groupACL("g1", acl.Read)}, kerr.UnknownMemberID.Code},
		{"LeaveGroup g1", "no ACL", nil, groupNo},
		{"LeaveGroup g1", "Read", []acl.Binding{groupACL("g1", acl.Read)}, ok},
		{"DescribeGroups g1", "no ACL", nil, groupNo},
		{"DescribeGroups g1", "Describe", []acl.Binding{groupACL("g1", acl.Describe)}, ok},
		{"ListGroups lists g1", "no ACL", nil, groupNo},
		{"ListGroups lists g1", "Describe on the group", []acl.Binding{groupACL("g1", acl.Describe)}, ok},
		{"ListGroups lists g1", "Describe on the cluster", []acl.Binding{clusterACL(acl.Describe)}, ok},
		{"DeleteGroups gone-N", "Read is not Delete", []acl.Binding{allow(acl.Group, P, "gone", acl.Read)}, groupNo},
		{"DeleteGroups gone-N", "Delete", []acl.Binding{allow(acl.Group, P, "gone", acl.Delete)}, ok},

		// Topic administration.
		{"CreateTopics new-N", "no ACL", nil, topicNo},
		{"CreateTopics new-N", "Create on the cluster", []acl.Binding{clusterACL(acl.Create)}, ok},
		{"CreateTopics new-N", "prefixed Create on the topic", []acl.Binding{topicACL(P, "new-", acl.Create)}, ok},
		{"CreateTopics new-N, its configs in the response", "Create without DescribeConfigs", []acl.Binding{clusterACL(acl.Create)}, topicNo},
		{"CreateTopics new-N, its configs in the response", "and DescribeConfigs", []acl.Binding{clusterACL(acl.Create), topicACL(P, "new-", acl.DescribeConfigs)}, ok},
		{"DeleteTopics doomed-N", "no ACL", nil, topicNo},
		{"DeleteTopics doomed-N", "prefixed Delete", []acl.Binding{topicACL(P, "doomed", acl.Delete)}, ok},
		{"DeleteTopics doomed-N", "Delete on another topic", []acl.Binding{topicACL(acl.Literal, "orders", acl.Delete)}, topicNo},
		{"DescribeConfigs topic orders", "Describe is not DescribeConfigs", []acl.Binding{topicACL(L, "orders", acl.Describe)}, topicNo},
		{"DescribeConfigs topic orders", "DescribeConfigs", []acl.Binding{topicACL(L, "orders", acl.DescribeConfigs)}, ok},
		{"DescribeConfigs topic orders", "AlterConfigs implies it", []acl.Binding{topicACL(L, "orders", acl.AlterConfigs)}, ok},
		{"IncrementalAlterConfigs topic orders", "DescribeConfigs is not AlterConfigs", []acl.Binding{topicACL(L, "orders", acl.DescribeConfigs)}, topicNo},
		{"IncrementalAlterConfigs topic orders", "AlterConfigs", []acl.Binding{topicACL(L, "orders", acl.AlterConfigs)}, ok},
		{"AlterConfigs broker", "AlterConfigs on a topic is not on the cluster", []acl.Binding{topicACL(L, "orders", acl.AlterConfigs)}, clustNo},
		{"AlterConfigs broker", "AlterConfigs on the cluster", []acl.Binding{clusterACL(acl.AlterConfigs)}, ok},
		{"DescribeConfigs broker", "no ACL", nil, clustNo},
		{"DescribeConfigs broker", "DescribeConfigs on the cluster", []acl.Binding{clusterACL(acl.DescribeConfigs)}, ok},

		// Idempotent producers, Kafka 4's rule (KIP-679).
		{"InitProducerID, idempotent", "no ACL", nil, clustNo},
		{"InitProducerID, idempotent", "IdempotentWrite on the cluster", []acl.Binding{clusterACL(acl.IdempotentWrite)}, ok},
		{"InitProducerID, idempotent", "Write on one topic", []acl.Binding{topicACL(L, "orders", acl.Write)}, ok},
		{"InitProducerID, idempotent", "Write on a prefix", []acl.Binding{topicACL(P, "ord", acl.Write)}, ok},
		{"InitProducerID, idempotent", "Read on a topic is not enough", []acl.Binding{topicACL(L, "orders", acl.Read)}, clustNo},
		{"InitProducerID, idempotent", "Write denied on every topic", []acl.Binding{topicACL(L, "orders", acl.Write), deny(acl.Topic, L, "*", acl.Write)}, clustNo},
		{"InitProducerID, idempotent", "a deny prefix covering the allowed one", []acl.Binding{topicACL(P, "orders-", acl.Write), deny(acl.Topic, P, "ord", acl.Write)}, clustNo},
		{"InitProducerID, idempotent", "a deny prefix covering another one", []acl.Binding{topicACL(P, "orders", acl.Write), deny(acl.Topic, P, "orders-", acl.Write)}, ok},

		// ACL and credential administration: the cluster resource.
		{"DescribeAcls", "no ACL", nil, clustNo},
		{"DescribeAcls", "Describe on the cluster", []acl.Binding{clusterACL(acl.Describe)}, ok},
		{"CreateAcls", "Describe is not Alter", []acl.Binding{clusterACL(acl.Describe)}, clustNo},
		{"CreateAcls", "Alter on the cluster", []acl.Binding{clusterACL(acl.Alter)}, ok},
		{"DeleteAcls", "no ACL", nil, clustNo},
		{"DeleteAcls", "Alter on the cluster", []acl.Binding{clusterACL(acl.Alter)}, ok},
		{"DescribeUserScramCredentials", "no ACL", nil, clustNo},
		{"DescribeUserScramCredentials", "Alter implies Describe", []acl.Binding{clusterACL(acl.Alter)}, ok},
		{"AlterUserScramCredentials", "Describe is not Alter", []acl.Binding{clusterACL(acl.Describe)}, clustNo},
		{"AlterUserScramCredentials", "Alter on the cluster", []acl.Binding{clusterACL(acl.Alter)}, ok},
	} {
		t.Run(tc.op+"/"+tc.name, func(t *testing.T) {
			op := aclOps[tc.op]
			if op == nil {
				t.Fatalf("no op %q", tc.op)
			}
			w.grant(t, tc.acls...)
			if strings.HasPrefix(tc.op, "Produce") && tc.want != ok {
				produceDenials++
			}
			if got := op(t, w); got != tc.want {
				t.Errorf("error code %d (%v), want %d (%v)", got, kerr.ErrorForCode(got), tc.want, kerr.ErrorForCode(tc.want))
			}
		})
	}
	// Every check above ran on alice's connections, which stayed open.
	if err := w.alice.Ping(context.Background()); err != nil {
		t.Fatalf("alice's client after the denials: %v", err)
	}
	if n := metricValue(t, w.ts.srv, "passbook_kafka_authorization_denied_total", "api", "Produce"); n != float64(produceDenials) {
		t.Errorf("Produce denials counted: %v, want %d", n, produceDenials)
	}
}

// A super user needs no ACL; every other principal is denied by default.
func TestACL_SuperUserAndDefaultDeny(t *testing.T) {
	w := newACLWorld(t)
	w.grant(t)
	req := produceRequest(9, -1, "orders", 0, testBatch(t, 1, 10))
	if code := seedRequest[*kmsg.ProduceResponse](t, w.admin, req).Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("super user: error %d", code)
	}
	bob := w.ts.plainClient(t, "bob", kgo.RequestRetries(0), byName())
	if code := seedRequest[*kmsg.ProduceResponse](t, bob, req).Topics[0].Partitions[0].ErrorCode; code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("bob: error %d", code)
	}
}

// With franz-go's own producer and consumer: a denied topic fails with
// Kafka's error, the allowed one works, on the same client.
func TestACL_Franz_DeniedTopic(t *testing.T) {
	w := newACLWorld(t)
	w.grant(t, topicACL(acl.Literal, "orders", acl.Write), topicACL(acl.Literal, "orders", acl.Read), groupACL("readers", acl.Read))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl := w.ts.plainClient(t, "alice")
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("ok")}).FirstErr(); err != nil {
		t.Fatalf("produce to orders: %v", err)
	}
	err := cl.ProduceSync(ctx, &kgo.Record{Topic: "other", Value: []byte("no")}).FirstErr()
	if !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("produce to other: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	if w.ts.head(t, "other") != 0 {
		t.Fatal("a record reached the denied topic")
	}
	c := w.ts.plainClient(t, "alice", kgo.ConsumeTopics("orders"), kgo.ConsumerGroup("readers"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	fs := c.PollFetches(ctx)
	if err := fs.Err(); err != nil || fs.NumRecords() != 1 {
		t.Fatalf("group consumer: %d records, %v", fs.NumRecords(), err)
	}
	if err := c.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("commit: %v", err)
	}
}

// With client certificates the principal is User:CN, and ACLs name it.
func TestACL_MTLS_PrincipalIsCommonName(t *testing.T) {
	set := certs(t, "billing-service")
	az := authorizer(t)
	if err := az.Store().Add(allow(acl.Topic, acl.Literal, "invoices", acl.Write), allow(acl.Topic, acl.Prefixed, "invoices", acl.Describe)); err != nil {
		t.Fatal(err)
	}
	// The bindings above are alice's; the certificate's principal gets its own.
	if err := az.Store().Add(withPrincipal(allow(acl.Topic, acl.Literal, "invoices", acl.Write), "User:billing-service")); err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, &Options{TLS: set.ServerConfig(true), Authorizer: az})
	ts.createTopic(t, "invoices", 1)
	ts.createTopic(t, "payroll", 1)
	cl := ts.client(t, kgo.DialTLSConfig(set.ClientConfig(true)), kgo.RequestRetries(0), byName())

	ok := seedRequest[*kmsg.ProduceResponse](t, cl, produceRequest(9, -1, "invoices", 0, testBatch(t, 1, 10)))
	denied := seedRequest[*kmsg.ProduceResponse](t, cl, produceRequest(9, -1, "payroll", 0, testBatch(t, 1, 10)))
	if ok.Topics[0].Partitions[0].ErrorCode != 0 || denied.Topics[0].Partitions[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("invoices: error %d; payroll: error %d", ok.Topics[0].Partitions[0].ErrorCode, denied.Topics[0].Partitions[0].ErrorCode)
	}

	// Metadata lists only invoices, with the operations allowed on it.
	req := kmsg.NewPtrMetadataRequest()
	req.IncludeTopicAuthorizedOperations = true
	resp := seedRequest[*kmsg.MetadataResponse](t, cl, req)
	if len(resp.Topics) != 1 || *resp.Topics[0].Topic != "invoices" {
		t.Fatalf("metadata lists %d topics", len(resp.Topics))
	}
	if ops, want := resp.Topics[0].AuthorizedOperations, int32(1<<acl.Write|1<<acl.Describe); ops != want {
		t.Fatalf("authorized operations %b, want %b (WRITE, DESCRIBE)", ops, want)
	}

	// Without a certificate the handshake fails.
	bare := ts.client(t, kgo.DialTLSConfig(set.ClientConfig(false)), kgo.RequestRetries(0))
	if err := bare.Ping(context.Background()); err == nil {
		t.Fatal("a client without a certificate was served")
	}
}

// Metadata v8–v10 reports the cluster's authorized operations when
// asked: every one for a super user, those its ACLs allow for another.
func TestACL_Metadata_ClusterAuthorizedOperations(t *testing.T) {
	w := newACLWorld(t)
	w.grant(t, clusterACL(acl.Describe), clusterACL(acl.IdempotentWrite))
	for _, tc := range []struct {
		user string
		want int32
	}{
		{"admin", 1<<acl.Create | 1<<acl.ClusterAction | 1<<acl.DescribeConfigs | 1<<acl.AlterConfigs | 1<<acl.IdempotentWrite | 1<<acl.Alter | 1<<acl.Describe},
		{"alice", 1<<acl.Describe | 1<<acl.IdempotentWrite},
		{"bob", 0},
	} {
		r := dialRaw(t, w.ts.addr)
		if resp := r.authenticatePlain(2, tc.user, testUsers[tc.user]); resp.ErrorCode != 0 {
			t.Fatalf("%s: error %d", tc.user, resp.ErrorCode)
		}
		req := kmsg.NewPtrMetadataRequest()
		req.Version, req.IncludeClusterAuthorizedOperations = 10, true
		if got := r.do(req).(*kmsg.MetadataResponse).AuthorizedOperations; got != tc.want {
			t.Errorf("%s: cluster authorized operations %b, want %b", tc.user, got, tc.want)
		}
	}
}

// Before authentication a frame is bounded by Kafka's
// sasl.server.max.receive.size (512 KiB): a larger one closes the
// connection before it is read.
func TestSASL_LargeFrameBeforeAuthentication_Closes(t *testing.T) {
	ts := startServer(t, saslOptions(t))
	r := dialRaw(t, ts.addr)
	r.write([]byte{0, 8, 0, 1}) // 512 KiB + 1
	if !r.closedByServer() {
		t.Fatal("connection open")
	}
	if n := ts.srv.Stats().Closed[closeTooLarge]; n != 1 {
		t.Fatalf("closed as too large: %d", n)
	}
}
