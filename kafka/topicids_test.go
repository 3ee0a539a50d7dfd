package kafka

import (
	"fmt"
	"testing"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/acl"
	"github.com/passbook-log/passbook/batch"
	"github.com/passbook-log/passbook/storage"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// oneBatch is a RecordBatch of n records.
func oneBatch(t *testing.T, n int) []byte {
	t.Helper()
	recs := make([]batch.Record, n)
	for i := range recs {
		recs[i].Value = []byte("v")
	}
	b, err := batch.Append(nil, recs, batch.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func produceByID(version int16, id [16]byte, records []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = version, -1, 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.TopicID = id
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = 0, records
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

func fetchByID(version int16, id [16]byte, from int64) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = version, 0, 0, 1<<20
	rt := kmsg.NewFetchRequestTopic()
	rt.TopicID = id
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = 0, from, 1<<20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

func commitByID(version int16, group string, id [16]byte, offset int64) *kmsg.OffsetCommitRequest {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version, req.Group, req.Generation = version, group, -1
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.TopicID = id
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset = 0, offset
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

func offsetFetchByID(version int16, group string, ids ...[16]byte) *kmsg.OffsetFetchRequest {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version = version
	g := kmsg.NewOffsetFetchRequestGroup()
	g.Group = group
	if ids != nil {
		g.Topics = []kmsg.OffsetFetchRequestGroupTopic{}
	}
	for _, id := range ids {
		rt := kmsg.NewOffsetFetchRequestGroupTopic()
		rt.TopicID, rt.Partitions = id, []int32{0}
		g.Topics = append(g.Topics, rt)
	}
	req.Groups = append(req.Groups, g)
	return req
}

func metadataByIDs(version int16, ids ...[16]byte) *kmsg.MetadataRequest {
	req := kmsg.NewPtrMetadataRequest()
	req.Version = version
	req.Topics = []kmsg.MetadataRequestTopic{}
	for _, id := range ids {
		rt := kmsg.NewMetadataRequestTopic()
		rt.TopicID = id
		req.Topics = append(req.Topics, rt)
	}
	return req
}

func listOffsetsAt(version int16, topic string, ts int64) *kmsg.ListOffsetsRequest {
	req := kmsg.NewPtrListOffsetsRequest()
	req.Version = version
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp = 0, ts
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// unknownID is an ID no topic has.
var unknownID = [16]byte{0xde, 0xad, 0xbe, 0xef}

// TestTopicIDs_NewestVersions sends each API at its newest version on a
// raw connection and checks what the response must carry. The cases
// run in order against one server: the produce is what the fetch, the
// commit what the offset fetch, reads.
func TestTopicIDs_NewestVersions(t *testing.T) {
	ts := startServer(t, nil)
	orders := ts.createTopic(t, "orders", 1)
	id := [16]byte(orders.ID())
	if id == ([16]byte{}) {
		t.Fatal("orders has no topic ID")
	}
	clusterID := *dialRaw(t, ts.addr).do(metadataByIDs(13)).(*kmsg.MetadataResponse).ClusterID

	for _, tc := range []struct {
		name  string
		req   kmsg.Request
		check func(t *testing.T, resp kmsg.Response)
	}{
		{"Metadata v13 by name carries the ID", func() kmsg.Request {
			req := kmsg.NewPtrMetadataRequest()
			req.Version = 13
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr("orders")
			req.Topics = append(req.Topics, rt)
			return req
		}(), func(t *testing.T, resp kmsg.Response) {
			r := resp.(*kmsg.MetadataResponse)
			if r.ErrorCode != 0 || len(r.Topics) != 1 || r.Topics[0].ErrorCode != 0 || r.Topics[0].TopicID != id {
				t.Fatalf("%+v", r)
			}
		}},
		{"Metadata v13 of every topic carries the IDs", func() kmsg.Request {
			req := kmsg.NewPtrMetadataRequest()
			req.Version = 13
			return req
		}(), func(t *testing.T, resp kmsg.Response) {
			r := resp.(*kmsg.MetadataResponse)
			if len(r.Topics) != 1 || *r.Topics[0].Topic != "orders" || r.Topics[0].TopicID != id {
				t.Fatalf("%+v", r.Topics)
			}
		}},
		{"Metadata v12 by ID names the topic", metadataByIDs(12, id), func(t *testing.T, resp kmsg.Response) {
			r := resp.(*kmsg.MetadataResponse)
			if len(r.Topics) != 1 || r.Topics[0].Topic == nil || *r.Topics[0].Topic != "orders" || r.Topics[0].TopicID != id || len(r.Topics[0].Partitions) != 1 {
				t.Fatalf("%+v", r.Topics)
			}
		}},
		{"Metadata v13 by an unknown ID", metadataByIDs(13, unknownID, id), func(t *testing.T, resp kmsg.Response) {
			r := resp.(*kmsg.MetadataResponse)
			if len(r.Topics) != 2 {
				t.Fatalf("%+v", r.Topics)
			}
			if u := r.Topics[0]; u.ErrorCode != kerr.UnknownTopicID.Code || u.Topic != nil || u.TopicID != unknownID {
				t.Fatalf("unknown ID: %+v", u)
			}
			if k := r.Topics[1]; k.ErrorCode != 0 || *k.Topic != "orders" {
				t.Fatalf("known ID: %+v", k)
			}
		}},
		{"Metadata v11 by ID is refused", metadataByIDs(11, id), func(t *testing.T, resp kmsg.Response) {
			r := resp.(*kmsg.MetadataResponse)
			if len(r.Topics) != 1 || r.Topics[0].ErrorCode != kerr.InvalidRequest.Code || len(r.Topics[0].Partitions) != 0 {
				t.Fatalf("%+v", r.Topics)
			}
		}},
		{"Produce v13 by ID", produceByID(13, id, oneBatch(t, 3)), func(t *testing.T, resp kmsg.Response) {
			r := resp.(*kmsg.ProduceResponse)
			if len(r.Topics) != 1 || r.Topics[0].TopicID != id || r.Topics[0].Partitions[0].ErrorCode != 0 || r.Topics[0].Partitions[0].BaseOffset != 0 {
				t.Fatalf("%+v", r.Topics)
			}
			if h := ts.head(t, "orders"); h != 3 {
				t.Fatalf("head %d, want 3", h)
			}
		}},
		{"Produce v13 by an unknown ID", produceByID(13, unknownID, oneBatch(t, 1)), func(t *testing.T, resp kmsg.Response) {
			r := resp.(*kmsg.ProduceResponse)
			if len(r.Topics) != 1 || r.Topics[0].TopicID != unknownID || r.Topics[0].Partitions[0].ErrorCode != kerr.UnknownTopicID.Code {
				t.Fatalf("%+v", r.Topics)
			}
			if h := ts.head(t, "orders"); h != 3 {
				t.Fatalf("head %d: a produce by an unknown ID was written", h)
			}
		}},
		{"Fetch v18 by ID", fetchByID(18, id, 0), func(t *testing.T, resp kmsg.Response) {
			r := resp.(*kmsg.FetchResponse)
			if len(r.Topics) != 1 || r.Topics[0].TopicID != id {
				t.Fatalf("%+v", r.Topics)
			}
			p := r.Topics[0].Partitions[0]
			if h, err := batch.Check(p.RecordBatches); p.ErrorCode != 0 || err != nil || h.RecordCount != 3 || p.HighWatermark != 3 {
				t.Fatalf("partition %+v: %v", p, err)
			}
		}},
		{"Fetch v13 by an unknown ID", fetchByID(13, unknownID, 0), func(t *testing.T, resp kmsg.Response) {
			r := resp.(*kmsg.FetchResponse)
			if len(r.Topics) != 1 || r.Topics[0].TopicID != unknownID {
				t.Fatalf("%+v", r.Topics)
			}
			if p := r.Topics[0].Partitions[0]; p.ErrorCode != kerr.UnknownTopicID.Code || len(p.RecordBatches) != 0 {
				t.Fatalf("partition %+v", p)
			}
		}},
		{"OffsetCommit v10 by ID", commitByID(10, "billing", id, 2), func(t *testing.T, resp kmsg.Response) {
			r := resp.(*kmsg.OffsetCommitResponse)
			if len(r.Topics) != 1 || r.Topics[0].TopicID != id || r.Topics[0].Partitions[0].ErrorCode != 0 {
				t.Fatalf("%+v", r.Topics)
			}
		}},
		{"OffsetCommit v10 by an unknown ID", commitByID(10, "billing", unknownID, 1), func(t *testing.T, resp kmsg.Response) {
			r := resp.(*kmsg.OffsetCommitResponse)
			if len(r.Topics) != 1 || r.Topics[0].TopicID != unknownID || r.Topics[0].Partitions[0].ErrorCode != kerr.UnknownTopicID.Code {
				t.Fatalf("%+v", r.Topics)
			}
		}},
		{"OffsetFetch v10 by ID", offsetFetchByID(10, "billing", id, unknownID), func(t *testing.T, resp kmsg.Response) {
			r := resp.(*kmsg.OffsetFetchResponse)
			if len(r.Groups) != 1 || r.Groups[0].ErrorCode != 0 || len(r.Groups[0].Topics) != 2 {
				t.Fatalf("%+v", r.Groups)
			}
			if k := r.Groups[0].Topics[0]; k.TopicID != id || k.Partitions[0].Offset != 2 || k.Partitions[0].ErrorCode != 0 {
				t.Fatalf("known ID: %+v", k)
			}
			if u := r.Groups[0].Topics[1]; u.TopicID != unknownID || u.Partitions[0].Offset != -1 || u.Partitions[0].ErrorCode != kerr.UnknownTopicID.Code {
				t.Fatalf("unknown ID: %+v", u)
			}
		}},
		{"OffsetFetch v10 of every topic carries the IDs", offsetFetchByID(10, "billing"), func(t *testing.T, resp kmsg.Response) {
			r := resp.(*kmsg.OffsetFetchResponse)
			if len(r.Groups) != 1 || len(r.Groups[0].Topics) != 1 {
				t.Fatalf("%+v", r.Groups)
			}
			if k := r.Groups[0].Topics[0]; k.TopicID != id || k.Partitions[0].Offset != 2 {
				t.Fatalf("%+v", k)
			}
		}},
		{"ListOffsets v11 -4: the local log start is the log start", listOffsetsAt(11, "orders", earliestLocalTimestamp), func(t *testing.T, resp kmsg.Response) {
			if p := resp.(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]; p.ErrorCode != 0 || p.Offset != 0 || p.Timestamp != -1 {
				t.Fatalf("%+v", p)
			}
		}},
		{"ListOffsets v11 -5: nothing is tiered", listOffsetsAt(11, "orders", latestTieredTimestamp), func(t *testing.T, resp kmsg.Response) {
			if p := resp.(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]; p.ErrorCode != 0 || p.Offset != -1 || p.Timestamp != -1 || p.LeaderEpoch != -1 {
				t.Fatalf("%+v", p)
			}
		}},
		{"ListOffsets v11 -6: nothing waits for upload", listOffsetsAt(11, "orders", earliestPendingUploadTimestamp), func(t *testing.T, resp kmsg.Response) {
			if p := resp.(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]; p.ErrorCode != 0 || p.Offset != -1 || p.Timestamp != -1 {
				t.Fatalf("%+v", p)
			}
		}},
		{"ListOffsets v11 -1: the head", listOffsetsAt(11, "orders", latestTimestamp), func(t *testing.T, resp kmsg.Response) {
			if p := resp.(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]; p.ErrorCode != 0 || p.Offset != 3 {
				t.Fatalf("%+v", p)
			}
		}},
		{"ListOffsets v7 -4 is refused", listOffsetsAt(7, "orders", earliestLocalTimestamp), func(t *testing.T, resp kmsg.Response) {
			if p := resp.(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]; p.ErrorCode != kerr.InvalidRequest.Code {
				t.Fatalf("%+v", p)
			}
		}},
		{"ListOffsets v10 -6 is refused", listOffsetsAt(10, "orders", earliestPendingUploadTimestamp), func(t *testing.T, resp kmsg.Response) {
			if p := resp.(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]; p.ErrorCode != kerr.InvalidRequest.Code {
				t.Fatalf("%+v", p)
			}
		}},
		{"CreateTopics v7 returns the new topic's ID", func() kmsg.Request {
			req := kmsg.NewPtrCreateTopicsRequest()
			req.Version, req.TimeoutMillis = 7, 10000
			rt := kmsg.NewCreateTopicsRequestTopic()
			rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "payments", 1, 1
			req.Topics = append(req.Topics, rt)
			return req
		}(), func(t *testing.T, resp kmsg.Response) {
			r := resp.(*kmsg.CreateTopicsResponse)
			p, err := ts.db.Topic("payments")
			if err != nil || r.Topics[0].ErrorCode != 0 || r.Topics[0].TopicID != [16]byte(p.ID()) {
				t.Fatalf("%+v (%v)", r.Topics, err)
			}
		}},
		{"ApiVersions v5 naming this cluster and node", func() kmsg.Request {
			req := kmsg.NewPtrApiVersionsRequest()
			req.Version, req.ClusterID, req.NodeID = 5, &clusterID, NodeID
			req.ClientSoftwareName, req.ClientSoftwareVersion = "raw-test", "1"
			return req
		}(), func(t *testing.T, resp kmsg.Response) {
			r := resp.(*kmsg.ApiVersionsResponse)
			if r.ErrorCode != 0 || len(r.ApiKeys) == 0 {
				t.Fatalf("%+v", r)
			}
		}},
		{"ApiVersions v5 naming another cluster", func() kmsg.Request {
			req := kmsg.NewPtrApiVersionsRequest()
			req.Version, req.ClusterID, req.NodeID = 5, kmsg.StringPtr("another"), NodeID
			req.ClientSoftwareName, req.ClientSoftwareVersion = "raw-test", "1"
			return req
		}(), func(t *testing.T, resp kmsg.Response) {
			if r := resp.(*kmsg.ApiVersionsResponse); r.ErrorCode != kerr.RebootstrapRequired.Code || len(r.ApiKeys) != 0 {
				t.Fatalf("%+v", r)
			}
		}},
		{"ApiVersions v5 naming another node", func() kmsg.Request {
			req := kmsg.NewPtrApiVersionsRequest()
			req.Version, req.ClusterID, req.NodeID = 5, &clusterID, NodeID+1
			req.ClientSoftwareName, req.ClientSoftwareVersion = "raw-test", "1"
			return req
		}(), func(t *testing.T, resp kmsg.Response) {
			if r := resp.(*kmsg.ApiVersionsResponse); r.ErrorCode != kerr.RebootstrapRequired.Code {
				t.Fatalf("%+v", r)
			}
		}},
		{"ApiVersions v5 naming a cluster but no node", func() kmsg.Request {
			req := kmsg.NewPtrApiVersionsRequest()
			req.Version, req.ClusterID = 5, &clusterID
			req.ClientSoftwareName, req.ClientSoftwareVersion = "raw-test", "1"
			return req
		}(), func(t *testing.T, resp kmsg.Response) {
			if r := resp.(*kmsg.ApiVersionsResponse); r.ErrorCode != kerr.InvalidRequest.Code {
				t.Fatalf("%+v", r)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.check(t, dialRaw(t, ts.addr).do(tc.req))
		})
	}
}

func deleteByIDs(topics ...kmsg.DeleteTopicsRequestTopic) *kmsg.DeleteTopicsRequest {
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.Version, req.TimeoutMillis, req.Topics = 6, 10000, topics
	return req
}

// TestDeleteTopics_V6: topics by name or by ID, each answered with both.
func TestDeleteTopics_V6(t *testing.T) {
	ts := startServer(t, nil)
	byName := func(name string) kmsg.DeleteTopicsRequestTopic {
		return kmsg.DeleteTopicsRequestTopic{Topic: kmsg.StringPtr(name)}
	}
	byID := func(id [16]byte) kmsg.DeleteTopicsRequestTopic { return kmsg.DeleteTopicsRequestTopic{TopicID: id} }
	for _, tc := range []struct {
		name   string
		create []string // topics created first
		req    func(ids map[string][16]byte) *kmsg.DeleteTopicsRequest
		want   []int16 // the error code of each topic answered, in order
		gone   []string
		kept   []string
	}{
		{"by ID", []string{"a"}, func(ids map[string][16]byte) *kmsg.DeleteTopicsRequest {
			return deleteByIDs(byID(ids["a"]))
		}, []int16{0}, []string{"a"}, nil},
		{"by name", []string{"b"}, func(map[string][16]byte) *kmsg.DeleteTopicsRequest {
			return deleteByIDs(byName("b"))
		}, []int16{0}, []string{"b"}, nil},
		{"an unknown ID", nil, func(map[string][16]byte) *kmsg.DeleteTopicsRequest {
			return deleteByIDs(byID(unknownID))
		}, []int16{kerr.UnknownTopicID.Code}, nil, nil},
		{"an unknown name", nil, func(map[string][16]byte) *kmsg.DeleteTopicsRequest {
			return deleteByIDs(byName("nope"))
		}, []int16{kerr.UnknownTopicOrPartition.Code}, nil, nil},
		{"both name and ID", []string{"c"}, func(ids map[string][16]byte) *kmsg.DeleteTopicsRequest {
			return deleteByIDs(kmsg.DeleteTopicsRequestTopic{Topic: kmsg.StringPtr("c"), TopicID: ids["c"]})
		}, []int16{kerr.InvalidRequest.Code}, nil, []string{"c"}},
		{"neither name nor ID", nil, func(map[string][16]byte) *kmsg.DeleteTopicsRequest {
			return deleteByIDs(kmsg.DeleteTopicsRequestTopic{})
		}, []int16{kerr.InvalidRequest.Code}, nil, nil},
		{"one ID twice", []string{"d"}, func(ids map[string][16]byte) *kmsg.DeleteTopicsRequest {
			return deleteByIDs(byID(ids["d"]), byID(ids["d"]))
		}, []int16{kerr.InvalidRequest.Code, kerr.InvalidRequest.Code}, nil, []string{"d"}},
		{"a topic by name and by ID", []string{"e"}, func(ids map[string][16]byte) *kmsg.DeleteTopicsRequest {
			return deleteByIDs(byName("e"), byID(ids["e"]))
		}, []int16{kerr.InvalidRequest.Code, kerr.InvalidRequest.Code}, nil, []string{"e"}},
		{"two topics, one by each", []string{"f", "g"}, func(ids map[string][16]byte) *kmsg.DeleteTopicsRequest {
			return deleteByIDs(byName("f"), byID(ids["g"]))
		}, []int16{0, 0}, []string{"f", "g"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ids := map[string][16]byte{}
			for _, name := range tc.create {
				ids[name] = ts.createTopic(t, name, 1).ID()
			}
			resp := dialRaw(t, ts.addr).do(tc.req(ids)).(*kmsg.DeleteTopicsResponse)
			if len(resp.Topics) != len(tc.want) {
				t.Fatalf("%d topics answered, want %d: %+v", len(resp.Topics), len(tc.want), resp.Topics)
			}
			for i, rt := range resp.Topics {
				if rt.ErrorCode != tc.want[i] {
					t.Errorf("topic %d: error %d, want %d (%v)", i, rt.ErrorCode, tc.want[i], rt.ErrorMessage)
				}
				if rt.ErrorCode == 0 && (rt.Topic == nil || rt.TopicID != ids[*rt.Topic]) {
					t.Errorf("deleted topic %d answered as %v %v, want its name and ID", i, rt.Topic, rt.TopicID)
				}
			}
			for _, name := range tc.gone {
				if _, err := ts.db.Topic(name); err == nil {
					t.Errorf("%s not deleted", name)
				}
			}
			for _, name := range tc.kept {
				if _, err := ts.db.Topic(name); err != nil {
					t.Errorf("%s deleted: %v", name, err)
				}
			}
		})
	}
}

// TestTopicIDs_RecreatedTopic: a topic deleted and created again under
// the same name has a new ID, and what names the old ID — a fetch, a
// produce, a commit, a metadata lookup — is UNKNOWN_TOPIC_ID: nothing of
// the new topic is read or written through it.
func TestTopicIDs_RecreatedTopic(t *testing.T) {
	ts := startServer(t, nil)
	rc := dialRaw(t, ts.addr)
	create := func() [16]byte {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.Version, req.TimeoutMillis = 7, 10000
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "orders", 1, 1
		req.Topics = append(req.Topics, rt)
		resp := rc.do(req).(*kmsg.CreateTopicsResponse)
		if resp.Topics[0].ErrorCode != 0 {
			t.Fatalf("create: %+v", resp.Topics[0])
		}
		return resp.Topics[0].TopicID
	}
	old := create()
	if r := rc.do(produceByID(13, old, oneBatch(t, 5))).(*kmsg.ProduceResponse); r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("produce: %+v", r.Topics[0].Partitions[0])
	}
	if r := rc.do(deleteByIDs(kmsg.DeleteTopicsRequestTopic{TopicID: old})).(*kmsg.DeleteTopicsResponse); r.Topics[0].ErrorCode != 0 {
		t.Fatalf("delete: %+v", r.Topics[0])
	}
	recreated := create()
	if recreated == old || recreated == ([16]byte{}) {
		t.Fatalf("the re-created topic's ID is %v, the deleted one's %v", recreated, old)
	}

	if p := rc.do(fetchByID(18, old, 0)).(*kmsg.FetchResponse).Topics[0].Partitions[0]; p.ErrorCode != kerr.UnknownTopicID.Code || len(p.RecordBatches) != 0 {
		t.Errorf("fetch by the old ID: %+v", p)
	}
	if p := rc.do(fetchByID(18, recreated, 0)).(*kmsg.FetchResponse).Topics[0].Partitions[0]; p.ErrorCode != 0 || p.HighWatermark != 0 {
		t.Errorf("fetch by the new ID: %+v, want an empty partition", p)
	}
	if p := rc.do(produceByID(13, old, oneBatch(t, 1))).(*kmsg.ProduceResponse).Topics[0].Partitions[0]; p.ErrorCode != kerr.UnknownTopicID.Code {
		t.Errorf("produce by the old ID: %+v", p)
	}
	if h := ts.head(t, "orders"); h != 0 {
		t.Errorf("head of the re-created topic %d, want 0", h)
	}
	if p := rc.do(commitByID(10, "billing", old, 5)).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0]; p.ErrorCode != kerr.UnknownTopicID.Code {
		t.Errorf("commit by the old ID: %+v", p)
	}
	if mt := rc.do(metadataByIDs(13, old)).(*kmsg.MetadataResponse).Topics[0]; mt.ErrorCode != kerr.UnknownTopicID.Code || mt.Topic != nil {
		t.Errorf("metadata by the old ID: %+v", mt)
	}
	if mt := rc.do(metadataByIDs(13, recreated)).(*kmsg.MetadataResponse).Topics[0]; mt.ErrorCode != 0 || *mt.Topic != "orders" {
		t.Errorf("metadata by the new ID: %+v", mt)
	}
}

// TestTopicIDs_ACLs: by ID, an unknown ID is UNKNOWN_TOPIC_ID whatever
// the ACLs (it names no topic to check them on); a topic the client may
// not Describe is TOPIC_AUTHORIZATION_FAILED with its ID and no name (IDs
// are not secret, names are); one it may Describe but not read or
// delete is TOPIC_AUTHORIZATION_FAILED with its name, as Kafka answers.
func TestTopicIDs_ACLs(t *testing.T) {
	w := newACLWorld(t)
	w.grant(t, topicACL(acl.Literal, "orders", acl.Describe))
	alice := w.ts.plainClient(t, "alice", kgo.RequestRetries(0)) // the newest versions: by ID
	id := func(name string) [16]byte {
		tp, err := w.ts.db.Topic(name)
		if err != nil {
			t.Fatal(err)
		}
		return tp.ID()
	}
	orders, other := id("orders"), id("other")

	t.Run("Metadata", func(t *testing.T) {
		resp := seedRequest[*kmsg.MetadataResponse](t, alice, metadataByIDs(13, orders, other, unknownID))
		if len(resp.Topics) != 3 {
			t.Fatalf("%+v", resp.Topics)
		}
		if mt := resp.Topics[0]; mt.ErrorCode != 0 || mt.Topic == nil || *mt.Topic != "orders" || mt.TopicID != orders {
			t.Errorf("orders (Describe): %+v", mt)
		}
		if mt := resp.Topics[1]; mt.ErrorCode != kerr.TopicAuthorizationFailed.Code || mt.Topic != nil || mt.TopicID != other || len(mt.Partitions) != 0 {
			t.Errorf("other (no ACL): %+v", mt)
		}
		if mt := resp.Topics[2]; mt.ErrorCode != kerr.UnknownTopicID.Code || mt.Topic != nil {
			t.Errorf("unknown ID: %+v", mt)
		}
	})
	t.Run("Fetch", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			id   [16]byte
			want int16
		}{
			{"Describe is not Read", orders, kerr.TopicAuthorizationFailed.Code},
			{"an unknown ID", unknownID, kerr.UnknownTopicID.Code},
		} {
			p := seedRequest[*kmsg.FetchResponse](t, alice, fetchByID(18, tc.id, 0)).Topics[0].Partitions[0]
			if p.ErrorCode != tc.want {
				t.Errorf("%s: error %d, want %d", tc.name, p.ErrorCode, tc.want)
			}
		}
	})
	t.Run("DeleteTopics", func(t *testing.T) {
		resp := seedRequest[*kmsg.DeleteTopicsResponse](t, alice, deleteByIDs(
			kmsg.DeleteTopicsRequestTopic{TopicID: orders}, kmsg.DeleteTopicsRequestTopic{TopicID: other}))
		if len(resp.Topics) != 2 {
			t.Fatalf("%+v", resp.Topics)
		}
		if dt := resp.Topics[0]; dt.ErrorCode != kerr.TopicAuthorizationFailed.Code || dt.Topic == nil || *dt.Topic != "orders" {
			t.Errorf("orders (Describe, not Delete): %+v", dt)
		}
		if dt := resp.Topics[1]; dt.ErrorCode != kerr.TopicAuthorizationFailed.Code || dt.Topic != nil || dt.TopicID != other {
			t.Errorf("other (no ACL): %+v", dt)
		}
		for _, name := range []string{"orders", "other"} {
			if _, err := w.ts.db.Topic(name); err != nil {
				t.Errorf("%s deleted: %v", name, err)
			}
		}
	})
}

// BenchmarkFetch_ByID: one small fetch after another on a raw
// connection, naming the topic by name (v12) or by ID (v18), on a
// server with 1,000 topics: what translating the ID costs per request.
func BenchmarkFetch_ByID(b *testing.B) {
	ts := startServer(b, nil)
	for i := range 999 {
		if _, err := ts.db.CreateTopic(fmt.Sprintf("t%04d", i), passbook.TopicConfig{Partitions: 1}); err != nil {
			b.Fatal(err)
		}
	}
	orders := ts.createTopic(b, "orders", 1)
	if _, err := orders.AppendTo(0, []passbook.Record{{Value: []byte("v")}}, storage.InOS); err != nil {
		b.Fatal(err)
	}
	byName := fetchByID(12, [16]byte{}, 0)
	byName.Topics[0].Topic = "orders"
	for _, bc := range []struct {
		name string
		req  *kmsg.FetchRequest
	}{
		{"v12 by name", byName},
		{"v18 by ID", fetchByID(18, orders.ID(), 0)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			rc := dialRaw(b, ts.addr)
			for b.Loop() {
				if p := rc.do(bc.req).(*kmsg.FetchResponse).Topics[0].Partitions[0]; p.ErrorCode != 0 || len(p.RecordBatches) == 0 {
					b.Fatalf("%+v", p)
				}
			}
		})
	}
}
