package kafka

// DeleteTopics (key 20): versions 1–5 (topics by name; v6 names them by
// ID, which this server does not have). A topic's records and every
// committed offset on it are deleted.
//
// ACLs: Delete on each topic (TOPIC_AUTHORIZATION_FAILED for it, whether
// it exists or not).

import (
	"context"
	"errors"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/acl"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.DeleteTopics, 1, 5, deleteTopics) }

func deleteTopics(ctx context.Context, c *conn, req *kmsg.DeleteTopicsRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	for _, name := range req.TopicNames {
		t := kmsg.NewDeleteTopicsResponseTopic()
		t.Topic = &name
		if !c.allowed(acl.Delete, acl.Topic, name) {
			t.ErrorCode = kerr.TopicAuthorizationFailed.Code
			resp.Topics = append(resp.Topics, t)
			continue
		}
		err := c.s.db.DeleteTopic(context.WithoutCancel(ctx), name)
		if err == nil {
			c.s.log.Info("kafka: deleted topic", "topic", name)
		}
		if errors.Is(err, passbook.ErrUnknownTopic) || errors.Is(err, passbook.ErrInvalidName) {
			t.ErrorCode = kerr.UnknownTopicOrPartition.Code
		} else {
			t.ErrorCode = errorCode(err)
		}
		t.ErrorMessage = errorMessage(err)
		resp.Topics = append(resp.Topics, t)
	}
	return reply{resp: resp}, nil
}
