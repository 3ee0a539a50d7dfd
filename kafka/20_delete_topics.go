package kafka

// DeleteTopics (key 20): versions 1–6. A topic's records and every
// committed offset on it are deleted. v6 names each topic by name or by
// ID (not both: INVALID_REQUEST; neither: INVALID_REQUEST) and answers
// with both; an ID no topic has is UNKNOWN_TOPIC_ID. A name or an ID
// given twice, or a topic given both by name and by ID, is
// INVALID_REQUEST, and is not deleted.
//
// ACLs: Delete on each topic (TOPIC_AUTHORIZATION_FAILED for it, whether
// it exists or not). A topic given by ID that the client may not delete
// is named in the answer only if it may Describe it.

import (
	"context"
	"errors"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/acl"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.DeleteTopics, 1, 6, deleteTopics) }

func deleteTopics(ctx context.Context, c *conn, req *kmsg.DeleteTopicsRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	topics := req.Topics
	if req.Version < 6 {
		topics = nil
		for _, name := range req.TopicNames {
			topics = append(topics, kmsg.DeleteTopicsRequestTopic{Topic: &name})
		}
	}
	answer := func(name *string, id [16]byte, code int16, msg string) {
		t := kmsg.NewDeleteTopicsResponseTopic()
		t.Topic, t.TopicID, t.ErrorCode = name, id, code
		if msg != "" {
			t.ErrorMessage = &msg
		}
		resp.Topics = append(resp.Topics, t)
	}
	names, ids := map[string]int{}, map[[16]byte]int{}
	for _, rt := range topics {
		if rt.Topic != nil {
			names[*rt.Topic]++
		} else {
			ids[rt.TopicID]++
		}
	}
	for _, rt := range topics {
		name, id := rt.Topic, rt.TopicID
		switch {
		case name == nil && id == [16]byte{}:
			answer(nil, id, kerr.InvalidRequest.Code, "Neither topic name nor id were specified.")
			continue
		case name != nil && id != [16]byte{}:
			answer(name, id, kerr.InvalidRequest.Code, "You may not specify both topic name and topic id.")
			continue
		case name != nil && names[*name] > 1:
			answer(name, id, kerr.InvalidRequest.Code, "Duplicate topic name.")
			continue
		case name == nil && ids[id] > 1:
			answer(nil, id, kerr.InvalidRequest.Code, "Duplicate topic id.")
			continue
		}
		if name == nil {
			n, ok := c.topicNameByID(id)
			if !ok {
				answer(nil, id, kerr.UnknownTopicID.Code, "")
				continue
			}
			if !c.allowed(acl.Delete, acl.Topic, n) {
				if c.may(acl.Describe, acl.Topic, n) {
					answer(&n, id, kerr.TopicAuthorizationFailed.Code, "")
				} else {
					answer(nil, id, kerr.TopicAuthorizationFailed.Code, "")
				}
				continue
			}
			if names[n] > 0 {
				answer(&n, id, kerr.InvalidRequest.Code, "The provided topic id is also given by name.")
				continue
			}
			name = &n
		} else {
			if !c.allowed(acl.Delete, acl.Topic, *name) {
				answer(name, id, kerr.TopicAuthorizationFailed.Code, "")
				continue
			}
			id = c.s.topicIDOf(*name)
			if id != ([16]byte{}) && ids[id] > 0 {
				answer(name, id, kerr.InvalidRequest.Code, "The provided topic name maps to an ID that was already supplied.")
				continue
			}
		}
		err := c.s.db.DeleteTopic(context.WithoutCancel(ctx), *name)
		if err == nil {
			c.s.log.Info("kafka: deleted topic", "topic", *name)
		}
		code := errorCode(err)
		if errors.Is(err, passbook.ErrUnknownTopic) || errors.Is(err, passbook.ErrInvalidName) {
			code = kerr.UnknownTopicOrPartition.Code
		}
		t := kmsg.NewDeleteTopicsResponseTopic()
		t.Topic, t.TopicID, t.ErrorCode, t.ErrorMessage = name, id, code, errorMessage(err)
		resp.Topics = append(resp.Topics, t)
	}
	return reply{resp: resp}, nil
}
