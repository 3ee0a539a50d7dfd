package kafka

// DescribeTransactions (key 65): version 0.
//
// Each transactional id's producer id and epoch, state (Kafka's names:
// Empty, Ongoing, PrepareCommit, PrepareAbort, CompleteCommit,
// CompleteAbort), transaction.timeout.ms, the start of its last
// transaction (−1 if it began none since its InitProducerID, as Kafka)
// and the partitions of its ongoing one. An id the coordinator
// does not know is TRANSACTIONAL_ID_NOT_FOUND, an empty one
// INVALID_REQUEST.
//
// ACLs: Describe on each transactional id
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED); only the partitions of topics
// the client may Describe are listed, as Kafka.

import (
	"context"

	"github.com/passbook-log/passbook/acl"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.DescribeTransactions, 0, 0, describeTransactions) }

func describeTransactions(_ context.Context, c *conn, req *kmsg.DescribeTransactionsRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	byID := map[string]txnSummary{}
	for _, s := range c.s.txns.summaries() {
		byID[s.id] = s
	}
	for _, id := range req.TransactionalIDs {
		st := kmsg.NewDescribeTransactionsResponseTransactionState()
		st.TransactionalID = id
		st.ProducerID, st.ProducerEpoch, st.StartTimestamp = -1, -1, -1
		s, ok := byID[id]
		switch {
		case id == "":
			st.ErrorCode = kerr.InvalidRequest.Code
		case !c.allowed(acl.Describe, acl.TransactionalID, id):
			st.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		case !ok:
			st.ErrorCode = kerr.TransactionalIDNotFound.Code
		default:
			st.ProducerID, st.ProducerEpoch, st.State, st.TimeoutMillis = s.pid, s.epoch, s.state.String(), s.timeoutMs
			if !s.start.IsZero() {
				st.StartTimestamp = s.start.UnixMilli()
			}
			for _, k := range s.parts {
				if !c.may(acl.Describe, acl.Topic, k.topic) {
					continue
				}
				if n := len(st.Topics); n == 0 || st.Topics[n-1].Topic != k.topic {
					t := kmsg.NewDescribeTransactionsResponseTransactionStateTopic()
					t.Topic = k.topic
					st.Topics = append(st.Topics, t)
				}
				t := &st.Topics[len(st.Topics)-1]
				t.Partitions = append(t.Partitions, k.partition)
			}
		}
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	return reply{resp: resp}, nil
}
