package kafka

import (
	"testing"

	"github.com/passbook-log/passbook/acl"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// TestACL_Transactions: what Kafka 4 asks of each transaction API. Each
// case runs against a transactional id "tx" that the admin has just
// initialized; an allowed request gets the coordinator's own answer
// (which may be an error of the state machine, never an authorization
// failure).
func TestACL_Transactions(t *testing.T) {
	w := newACLWorld(t)
	// A producer's AddPartitionsToTxn is v3: franz-go sends the newest
	// version both sides have unless capped.
	v := kversion.Stable()
	v.SetMaxKeyVersion(int16(kmsg.AddPartitionsToTxn), 3)
	producer := w.ts.plainClient(t, "alice", kgo.RequestRetries(0), kgo.MaxVersions(v))
	L := acl.Literal
	txnACL := func(op acl.Operation) acl.Binding { return allow(acl.TransactionalID, L, "tx", op) }
	var pid int64
	var epoch int16
	initTx := func(t *testing.T) {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID, req.TransactionTimeoutMillis, req.ProducerID, req.ProducerEpoch = kmsg.StringPtr("tx"), 60_000, -1, -1
		resp := seedRequest[*kmsg.InitProducerIDResponse](t, w.admin, req)
		if resp.ErrorCode == kerr.ConcurrentTransactions.Code {
			// The last case left a transaction open: it was aborted.
			resp = seedRequest[*kmsg.InitProducerIDResponse](t, w.admin, req)
		}
		if resp.ErrorCode != 0 {
			t.Fatalf("admin's InitProducerID: %v", kerr.ErrorForCode(resp.ErrorCode))
		}
		pid, epoch = resp.ProducerID, resp.ProducerEpoch
	}
	ops := map[string]func(t *testing.T) int16{
		"FindCoordinator tx": func(t *testing.T) int16 {
			req := kmsg.NewPtrFindCoordinatorRequest()
			req.CoordinatorType, req.CoordinatorKeys = coordinatorTransaction, []string{"tx"}
			return seedRequest[*kmsg.FindCoordinatorResponse](t, w.alice, req).Coordinators[0].ErrorCode
		},
		"InitProducerID tx": func(t *testing.T) int16 {
			req := kmsg.NewPtrInitProducerIDRequest()
			req.TransactionalID, req.TransactionTimeoutMillis, req.ProducerID, req.ProducerEpoch = kmsg.StringPtr("tx"), 60_000, -1, -1
			return seedRequest[*kmsg.InitProducerIDResponse](t, w.alice, req).ErrorCode
		},
		"AddPartitionsToTxn orders": func(t *testing.T) int16 {
			req := kmsg.NewPtrAddPartitionsToTxnRequest()
			req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch = 3, "tx", pid, epoch
			rt := kmsg.NewAddPartitionsToTxnRequestTopic()
			rt.Topic, rt.Partitions = "orders", []int32{0}
			req.Topics = append(req.Topics, rt)
			return seedRequest[*kmsg.AddPartitionsToTxnResponse](t, producer, req).Topics[0].Partitions[0].ErrorCode
		},
		"AddPartitionsToTxn v5 (brokers')": func(t *testing.T) int16 {
			req := kmsg.NewPtrAddPartitionsToTxnRequest()
			req.Version = 5
			tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
			tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch, tx.VerifyOnly = "tx", pid, epoch, true
			tt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
			tt.Topic, tt.Partitions = "orders", []int32{0}
			tx.Topics = append(tx.Topics, tt)
			req.Transactions = append(req.Transactions, tx)
			resp := seedRequest[*kmsg.AddPartitionsToTxnResponse](t, w.alice, req)
			if resp.ErrorCode != 0 {
				return resp.ErrorCode
			}
			return resp.Transactions[0].Topics[0].Partitions[0].ErrorCode
		},
		"AddOffsetsToTxn g1": func(t *testing.T) int16 {
			req := kmsg.NewPtrAddOffsetsToTxnRequest()
			req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = "tx", pid, epoch, "g1"
			return seedRequest[*kmsg.AddOffsetsToTxnResponse](t, w.alice, req).ErrorCode
		},
		"TxnOffsetCommit g1 orders": func(t *testing.T) int16 {
			req := kmsg.NewPtrTxnOffsetCommitRequest()
			req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch, req.Generation = "tx", "g1", pid, epoch, -1
			rt := kmsg.NewTxnOffsetCommitRequestTopic()
			rt.Topic = "orders"
			rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
			rp.Offset = 1
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			return seedRequest[*kmsg.TxnOffsetCommitResponse](t, w.alice, req).Topics[0].Partitions[0].ErrorCode
		},
		"EndTxn tx": func(t *testing.T) int16 {
			req := kmsg.NewPtrEndTxnRequest()
			req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = "tx", pid, epoch, true
			return seedRequest[*kmsg.EndTxnResponse](t, w.alice, req).ErrorCode
		},
		"DescribeTransactions tx": func(t *testing.T) int16 {
			req := kmsg.NewPtrDescribeTransactionsRequest()
			req.TransactionalIDs = []string{"tx"}
			return seedRequest[*kmsg.DescribeTransactionsResponse](t, w.alice, req).TransactionStates[0].ErrorCode
		},
		"ListTransactions": func(t *testing.T) int16 {
			resp := seedRequest[*kmsg.ListTransactionsResponse](t, w.alice, kmsg.NewPtrListTransactionsRequest())
			for _, s := range resp.TransactionStates {
				if s.TransactionalID == "tx" {
					return 0
				}
			}
			return kerr.TransactionalIDAuthorizationFailed.Code // not listed
		},
		"DescribeProducers orders": func(t *testing.T) int16 {
			req := kmsg.NewPtrDescribeProducersRequest()
			rt := kmsg.NewDescribeProducersRequestTopic()
			rt.Topic, rt.Partitions = "orders", []int32{0}
			req.Topics = append(req.Topics, rt)
			return seedRequest[*kmsg.DescribeProducersResponse](t, w.alice, req).Topics[0].Partitions[0].ErrorCode
		},
	}
	var (
		txnNo   = kerr.TransactionalIDAuthorizationFailed
		topicNo = kerr.TopicAuthorizationFailed
		groupNo = kerr.GroupAuthorizationFailed
		clustNo = kerr.ClusterAuthorizationFailed
	)
	for _, tc := range []struct {
		op   string
		name string
		acls []acl.Binding
		want *kerr.Error // nil: no error
	}{
		{"FindCoordinator tx", "no ACL", nil, txnNo},
		{"FindCoordinator tx", "Describe on the transactional id", []acl.Binding{txnACL(acl.Describe)}, nil},
		{"FindCoordinator tx", "Write implies Describe", []acl.Binding{txnACL(acl.Write)}, nil},
		{"InitProducerID tx", "no ACL", nil, txnNo},
		{"InitProducerID tx", "IdempotentWrite is not enough", []acl.Binding{clusterACL(acl.IdempotentWrite)}, txnNo},
		{"InitProducerID tx", "Describe is not Write", []acl.Binding{txnACL(acl.Describe)}, txnNo},
		{"InitProducerID tx", "Write on the transactional id", []acl.Binding{txnACL(acl.Write)}, nil},
		{"AddPartitionsToTxn orders", "no ACL", nil, txnNo},
		{"AddPartitionsToTxn orders", "the transactional id, not the topic", []acl.Binding{txnACL(acl.Write)}, topicNo},
		{"AddPartitionsToTxn orders", "the topic, not the transactional id", []acl.Binding{topicACL(L, "orders", acl.Write)}, txnNo},
		{"AddPartitionsToTxn orders", "both", []acl.Binding{txnACL(acl.Write), topicACL(L, "orders", acl.Write)}, nil},
		{"AddPartitionsToTxn v5 (brokers')", "a producer's rights", []acl.Binding{txnACL(acl.Write), topicACL(L, "orders", acl.Write)}, clustNo},
		{"AddPartitionsToTxn v5 (brokers')", "ClusterAction", []acl.Binding{clusterACL(acl.ClusterAction), txnACL(acl.Write), topicACL(L, "orders", acl.Write)}, kerr.InvalidTxnState},
		{"AddOffsetsToTxn g1", "no ACL", nil, txnNo},
		{"AddOffsetsToTxn g1", "the transactional id, not the group", []acl.Binding{txnACL(acl.Write)}, groupNo},
		{"AddOffsetsToTxn g1", "both", []acl.Binding{txnACL(acl.Write), groupACL("g1", acl.Read)}, nil},
		{"TxnOffsetCommit g1 orders", "no ACL", nil, txnNo},
		{"TxnOffsetCommit g1 orders", "no Read on the group", []acl.Binding{txnACL(acl.Write), topicACL(L, "orders", acl.Read)}, groupNo},
		{"TxnOffsetCommit g1 orders", "no Read on the topic", []acl.Binding{txnACL(acl.Write), groupACL("g1", acl.Read)}, topicNo},
		{"TxnOffsetCommit g1 orders", "all three (then: no AddOffsetsToTxn)", []acl.Binding{txnACL(acl.Write), groupACL("g1", acl.Read), topicACL(L, "orders", acl.Read)}, kerr.InvalidTxnState},
		{"EndTxn tx", "no ACL", nil, txnNo},
		{"EndTxn tx", "Write (then: no transaction)", []acl.Binding{txnACL(acl.Write)}, kerr.InvalidTxnState},
		{"DescribeTransactions tx", "no ACL", nil, txnNo},
		{"DescribeTransactions tx", "Describe", []acl.Binding{txnACL(acl.Describe)}, nil},
		{"ListTransactions", "no ACL: not listed", nil, txnNo},
		{"ListTransactions", "Describe: listed", []acl.Binding{txnACL(acl.Describe)}, nil},
		{"DescribeProducers orders", "no ACL", nil, topicNo},
		{"DescribeProducers orders", "Describe is not Read", []acl.Binding{topicACL(L, "orders", acl.Describe)}, topicNo},
		{"DescribeProducers orders", "Read", []acl.Binding{topicACL(L, "orders", acl.Read)}, nil},
	} {
		t.Run(tc.op+"/"+tc.name, func(t *testing.T) {
			initTx(t)
			w.grant(t, tc.acls...)
			wantErrCode(t, tc.op, ops[tc.op](t), tc.want)
		})
	}
}
