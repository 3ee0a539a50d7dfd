package kafka

// ListTransactions (key 66): versions 0–2.
//
// The transactional ids the coordinator knows, each with its producer id
// and state, filtered as Kafka's listTransactionStates filters: by state
// (Kafka's names; others are returned in unknown_state_filters and match
// nothing), by producer id, v1+ by duration (left out: an id whose last
// transaction started duration_filter ms ago or less; an id that has
// begun no transaction since its InitProducerID has no start and is
// always in, as in Kafka) and v2+ by a regular expression on the id (Go's
// RE2 syntax; one that does not compile is INVALID_REGULAR_EXPRESSION).
//
// ACLs: Describe on each transactional id; the others are left out.

import (
	"context"
	"regexp"
	"slices"
	"time"

	"github.com/passbook-log/passbook/acl"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.ListTransactions, 0, 2, listTransactions) }

func listTransactions(_ context.Context, c *conn, req *kmsg.ListTransactionsRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.ListTransactionsResponse)
	var states []txnState
	for _, name := range req.StateFilters {
		if st, ok := parseTxnState(name); ok {
			states = append(states, st)
		} else {
			resp.UnknownStateFilters = append(resp.UnknownStateFilters, name)
		}
	}
	if len(req.StateFilters) > 0 && len(states) == 0 {
		return reply{resp: resp}, nil // only unknown states: nothing matches
	}
	var re *regexp.Regexp
	if req.Version >= 2 && req.TransactionalIDPattern != nil && *req.TransactionalIDPattern != "" {
		var err error
		if re, err = regexp.Compile(*req.TransactionalIDPattern); err != nil {
			resp.ErrorCode = kerr.InvalidRegularExpression.Code
			return reply{resp: resp}, nil
		}
	}
	now := time.Now()
	for _, s := range c.s.txns.summaries() {
		switch {
		case len(states) > 0 && !slices.Contains(states, s.state):
			continue
		case len(req.ProducerIDFilters) > 0 && !slices.Contains(req.ProducerIDFilters, s.pid):
			continue
		case req.Version >= 1 && req.DurationFilterMillis >= 0 && !s.start.IsZero() && now.Sub(s.start).Milliseconds() <= req.DurationFilterMillis:
			continue
		case re != nil && !re.MatchString(s.id):
			continue
		case !c.may(acl.Describe, acl.TransactionalID, s.id):
			continue
		}
		ts := kmsg.NewListTransactionsResponseTransactionState()
		ts.TransactionalID, ts.ProducerID, ts.TransactionState = s.id, s.pid, s.state.String()
		resp.TransactionStates = append(resp.TransactionStates, ts)
	}
	return reply{resp: resp}, nil
}
