package kafka

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestMetadata_TopicLists(t *testing.T) {
	ts := startServer(t, nil)
	ts.createTopic(t, "a", 2)
	ts.createTopic(t, "b", 1)
	rc := dialRaw(t, ts.addr)
	topic := func(name string) kmsg.MetadataRequestTopic {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(name)
		return rt
	}
	byID := kmsg.NewMetadataRequestTopic()
	byID.TopicID = [16]byte{1}
	for _, tc := range []struct {
		name    string
		version int16
		topics  []kmsg.MetadataRequestTopic
		auto    bool
		want    map[string]int16 // topic → error code
	}{
		{"v0 empty list: all", 0, []kmsg.MetadataRequestTopic{}, false, map[string]int16{"a": 0, "b": 0}},
		{"v1 null: all", 1, nil, false, map[string]int16{"a": 0, "b": 0}},
		{"v1 empty list: none", 1, []kmsg.MetadataRequestTopic{}, false, map[string]int16{}},
		{"v12 one topic", 12, []kmsg.MetadataRequestTopic{topic("b")}, false, map[string]int16{"b": 0}},
		{"v4 missing, no auto-create", 4, []kmsg.MetadataRequestTopic{topic("c")}, false, map[string]int16{"c": kerr.UnknownTopicOrPartition.Code}},
		{"v4 invalid name", 4, []kmsg.MetadataRequestTopic{topic("c d")}, true, map[string]int16{"c d": kerr.InvalidTopicException.Code}},
		{"v3 missing: created (always allowed before v4)", 3, []kmsg.MetadataRequestTopic{topic("d")}, false, map[string]int16{"d": 0}},
		{"v12 by ID only", 12, []kmsg.MetadataRequestTopic{byID}, false, map[string]int16{"": kerr.UnknownTopicID.Code}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := kmsg.NewPtrMetadataRequest()
			req.Version, req.Topics, req.AllowAutoTopicCreation = tc.version, tc.topics, tc.auto
			resp := rc.do(req).(*kmsg.MetadataResponse)
			if len(resp.Brokers) != 1 || resp.Brokers[0].NodeID != NodeID || resp.Brokers[0].Host != "127.0.0.1" {
				t.Fatalf("brokers %+v", resp.Brokers)
			}
			got := map[string]int16{}
			for _, mt := range resp.Topics {
				name := ""
				if mt.Topic != nil {
					name = *mt.Topic
				}
				got[name] = mt.ErrorCode
				for _, p := range mt.Partitions {
					if p.Leader != NodeID || len(p.Replicas) != 1 || len(p.ISR) != 1 {
						t.Fatalf("partition %+v", p)
					}
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("topics %v, want %v", got, tc.want)
			}
			for name, code := range tc.want {
				if c, ok := got[name]; !ok || c != code {
					t.Fatalf("topics %v, want %v", got, tc.want)
				}
			}
		})
	}
}
