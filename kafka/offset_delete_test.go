package kafka

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/passbook-log/passbook/acl"
	"github.com/passbook-log/passbook/offsets"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// commitOffsets commits offset 5 of each partition for group, straight
// into the offset store.
func commitOffsets(t *testing.T, ts *testServer, group string, partitions map[string][]int32) {
	t.Helper()
	for topic, ps := range partitions {
		for _, p := range ps {
			if err := ts.db.Offsets().Commit(context.Background(), offsets.Key{Consumer: group, Topic: topic, Partition: p}, 5); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// storedKeys is what the offset store holds for group.
func storedKeys(t *testing.T, ts *testServer, group string) []offsets.Key {
	t.Helper()
	list, err := ts.db.Offsets().List(context.Background(), offsets.Filter{Consumer: group})
	if err != nil {
		t.Fatal(err)
	}
	var keys []offsets.Key
	for _, e := range list {
		keys = append(keys, e.Key)
	}
	return keys
}

func deleteSet(parts map[string][]int32) kadm.TopicsSet {
	s := kadm.TopicsSet{}
	for topic, ps := range parts {
		s.Add(topic, ps...)
	}
	return s
}

// OffsetDelete removes the group's offsets of the partitions named, and
// only those: gone from the store and from OffsetFetch; a partition
// without an offset succeeds; an unknown topic or partition is
// UNKNOWN_TOPIC_OR_PARTITION.
func TestOffsetDelete_DeletesThePartitionsNamed(t *testing.T) {
	ts := startServer(t, nil)
	ts.createTopic(t, "ledger", 3)
	ts.createTopic(t, "other", 2)
	commitOffsets(t, ts, "billing", map[string][]int32{"ledger": {0, 1, 2}, "other": {0}})
	commitOffsets(t, ts, "audit", map[string][]int32{"ledger": {0}})
	adm := kadm.NewClient(ts.client(t))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	resp, err := adm.DeleteOffsets(ctx, "billing", deleteSet(map[string][]int32{"ledger": {0, 2, 9}, "other": {1}, "nope": {0}}))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		topic     string
		partition int32
		want      error
	}{
		{"ledger", 0, nil}, {"ledger", 2, nil}, {"other", 1, nil},
		{"ledger", 9, kerr.UnknownTopicOrPartition}, {"nope", 0, kerr.UnknownTopicOrPartition},
	} {
		got, ok := resp[tc.topic][tc.partition]
		if !ok || !errors.Is(got, tc.want) && got != tc.want {
			t.Errorf("%s/%d: %v (answered %v), want %v", tc.topic, tc.partition, got, ok, tc.want)
		}
	}
	want := []offsets.Key{{Consumer: "billing", Topic: "ledger", Partition: 1}, {Consumer: "billing", Topic: "other", Partition: 0}}
	if got := storedKeys(t, ts, "billing"); !slices.Equal(got, want) {
		t.Errorf("the store holds %v for billing, want %v", got, want)
	}
	if got := storedKeys(t, ts, "audit"); len(got) != 1 {
		t.Errorf("another group's offsets changed: %v", got)
	}
	fetched, err := adm.FetchOffsets(ctx, "billing")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		topic     string
		partition int32
		committed bool
	}{{"ledger", 0, false}, {"ledger", 1, true}, {"ledger", 2, false}, {"other", 0, true}} {
		o, ok := fetched.Lookup(tc.topic, tc.partition)
		if got := ok && o.At == 5; got != tc.committed {
			t.Errorf("OffsetFetch %s/%d: %+v (listed %v), want committed %v", tc.topic, tc.partition, o, ok, tc.committed)
		}
	}
}

// The whole request fails for a group that has neither members nor
// offsets (GROUP_ID_NOT_FOUND), an empty group id (INVALID_GROUP_ID) and
// a group with members of another protocol type (NON_EMPTY_GROUP); a
// topic the live members consume keeps its offsets
// (GROUP_SUBSCRIBED_TO_TOPIC) while another topic's are deleted.
func TestOffsetDelete_Refusals(t *testing.T) {
	ts := startServer(t, nil)
	ts.createTopic(t, "ledger", 2)
	ts.createTopic(t, "other", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := kadm.NewClient(ts.client(t))

	for _, group := range []string{"never", ""} {
		want := kerr.GroupIDNotFound
		if group == "" {
			want = kerr.InvalidGroupID
		}
		if _, err := adm.DeleteOffsets(ctx, group, deleteSet(map[string][]int32{"ledger": {0}})); !errors.Is(err, want) {
			t.Errorf("group %q: %v, want %s", group, err, want)
		}
	}

	// A live franz-go member of billing consumes ledger.
	cl := ts.client(t, kgo.ConsumerGroup("billing"), kgo.ConsumeTopics("ledger"), kgo.DisableAutoCommit())
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "ledger", Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	for got := 0; got == 0; {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatal("the member consumed nothing")
		}
		got = len(fs.Records())
	}
	commitOffsets(t, ts, "billing", map[string][]int32{"ledger": {0, 1}, "other": {0}})
	resp, err := adm.DeleteOffsets(ctx, "billing", deleteSet(map[string][]int32{"ledger": {0, 1}, "other": {0}}))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []int32{0, 1} {
		if err := resp["ledger"][p]; !errors.Is(err, kerr.GroupSubscribedToTopic) {
			t.Errorf("ledger/%d, consumed by a live member: %v, want GROUP_SUBSCRIBED_TO_TOPIC", p, err)
		}
	}
	if err := resp["other"][0]; err != nil {
		t.Errorf("other/0, which no member consumes: %v", err)
	}
	want := []offsets.Key{{Consumer: "billing", Topic: "ledger", Partition: 0}, {Consumer: "billing", Topic: "ledger", Partition: 1}}
	if got := storedKeys(t, ts, "billing"); !slices.Equal(got, want) {
		t.Errorf("the store holds %v, want %v", got, want)
	}

	// A member of another protocol type: the broker cannot read its
	// subscription, and the group is not empty.
	r := dialRaw(t, ts.addr)
	join := kmsg.NewPtrJoinGroupRequest()
	join.Version, join.Group, join.ProtocolType = 3, "workers", "connect"
	join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = 30000, 30000
	proto := kmsg.NewJoinGroupRequestProtocol()
	proto.Name, proto.Metadata = "default", []byte{0, 1}
	join.Protocols = append(join.Protocols, proto)
	if jr := r.do(join).(*kmsg.JoinGroupResponse); jr.ErrorCode != 0 {
		t.Fatalf("join: error %d", jr.ErrorCode)
	}
	commitOffsets(t, ts, "workers", map[string][]int32{"other": {0}})
	if _, err := adm.DeleteOffsets(ctx, "workers", deleteSet(map[string][]int32{"other": {0}})); !errors.Is(err, kerr.NonEmptyGroup) {
		t.Errorf("a group of connect members: %v, want NON_EMPTY_GROUP", err)
	}
	if got := storedKeys(t, ts, "workers"); len(got) != 1 {
		t.Errorf("the refused delete changed the store: %v", got)
	}
}

// ACLs, as Kafka's: Delete on the group for the request, then Read on
// each topic for its partitions.
func TestOffsetDelete_ACLs(t *testing.T) {
	w := newACLWorld(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	adm := kadm.NewClient(w.alice)
	set := deleteSet(map[string][]int32{"orders": {0}})
	kept := func() bool { return len(storedKeys(t, w.ts, "g1")) == 1 }

	w.grant(t, groupACL("g1", acl.Read), topicACL(acl.Literal, "orders", acl.Read))
	if _, err := adm.DeleteOffsets(ctx, "g1", set); !errors.Is(err, kerr.GroupAuthorizationFailed) || !kept() {
		t.Errorf("without Delete on the group: %v, offsets kept %v; want GROUP_AUTHORIZATION_FAILED and kept", err, kept())
	}
	w.grant(t, groupACL("g1", acl.Delete), topicACL(acl.Literal, "orders", acl.Describe))
	resp, err := adm.DeleteOffsets(ctx, "g1", set)
	if err != nil || !errors.Is(resp["orders"][0], kerr.TopicAuthorizationFailed) || !kept() {
		t.Errorf("without Read on the topic: %v, %v, offsets kept %v; want TOPIC_AUTHORIZATION_FAILED and kept", err, resp, kept())
	}
	if n := metricValue(t, w.ts.srv, "passbook_kafka_authorization_denied_total", "api", "OffsetDelete"); n != 2 {
		t.Errorf("denials counted: %v, want 2", n)
	}
	w.grant(t, groupACL("g1", acl.Delete), topicACL(acl.Literal, "orders", acl.Read))
	if resp, err := adm.DeleteOffsets(ctx, "g1", set); err != nil || resp.Error() != nil || kept() {
		t.Errorf("with both: %v, %v, offsets kept %v; want deleted", err, resp, kept())
	}
}
