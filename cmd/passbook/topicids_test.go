package main

import (
	"context"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// topicIDOn asks the server cl talks to for topic's ID (Metadata): what
// a request that names topics by ID — Produce v13, Fetch v13+,
// OffsetCommit v10 — needs.
func topicIDOn(ctx context.Context, t *testing.T, cl *kgo.Client, topic string) [16]byte {
	t.Helper()
	id, err := topicID(ctx, cl, topic)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// topicID is topicIDOn for a caller without a *testing.T.
func topicID(ctx context.Context, cl *kgo.Client, topic string) ([16]byte, error) {
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return [16]byte{}, fmt.Errorf("metadata of %s: %w", topic, err)
	}
	if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 {
		return [16]byte{}, fmt.Errorf("metadata of %s: %+v", topic, resp.Topics)
	}
	return resp.Topics[0].TopicID, nil
}
