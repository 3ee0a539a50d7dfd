package kafka

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/vfs"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// registered lists the handlers, in key order.
func registered() []*handler {
	var hs []*handler
	for _, h := range handlers {
		if h != nil {
			hs = append(hs, h)
		}
	}
	return hs
}

// fuzzFrame builds a request frame with a valid header for the idx-th
// registered key at a version within its range, followed by body.
func fuzzFrame(idx, version uint8, body []byte) []byte {
	hs := registered()
	h := hs[int(idx)%len(hs)]
	v := h.min + int16(version)%(h.max-h.min+1)
	frame := binary.BigEndian.AppendUint16(nil, uint16(h.key))
	frame = binary.BigEndian.AppendUint16(frame, uint16(v))
	frame = binary.BigEndian.AppendUint32(frame, 7)
	frame = binary.BigEndian.AppendUint16(frame, 4)
	frame = append(frame, "fuzz"...)
	req := h.key.Request()
	req.SetVersion(v)
	if req.IsFlexible() {
		frame = append(frame, 0)
	}
	return append(frame, body...)
}

// FuzzRequest sends arbitrary bytes after a valid request header, for
// every registered key and version: decoding either fails cleanly or the
// handler runs, and nothing panics. The seed corpus in
// testdata/fuzz/FuzzRequest holds a valid request of every key.
func FuzzRequest(f *testing.F) {
	db, err := passbook.Open(f.TempDir(), &passbook.Options{FS: vfs.NewMem()})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { db.Close() })
	if _, err := db.CreateTopic("fuzz", passbook.TopicConfig{Partitions: 2}); err != nil {
		f.Fatal(err)
	}
	srv, err := NewServer(db, &Options{SocketRequestMaxBytes: 1 << 20})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { srv.Close() }) // stops the groups' timers
	c := &conn{s: srv, host: "127.0.0.1", port: 9092, remote: "fuzz"}
	f.Fuzz(func(t *testing.T, idx, version uint8, body []byte) {
		req, h, corr, err := decodeRequest(fuzzFrame(idx, version, body))
		if err != nil {
			return
		}
		if ct, ok := req.(*kmsg.CreateTopicsRequest); ok {
			// Thousands of partitions are valid but only slow: cap them
			// to keep each run short.
			for i := range ct.Topics {
				ct.Topics[i].NumPartitions = min(ct.Topics[i].NumPartitions, 50)
				ct.Topics[i].ReplicaAssignment = ct.Topics[i].ReplicaAssignment[:min(len(ct.Topics[i].ReplicaAssignment), 50)]
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		began := time.Now()
		defer func() {
			if el := time.Since(began); el > 3*time.Second {
				t.Fatalf("%s v%d took %v", h.key.Name(), req.GetVersion(), el)
			}
		}()
		r, err := h.serve(ctx, c, req)
		if err != nil || r.resp == nil {
			return
		}
		if r.wait != nil {
			r.wait(ctx)
		}
		r.resp.SetVersion(req.GetVersion())
		out := appendResponse(nil, corr, r.resp, r.resp.IsFlexible())
		// What the server writes must decode as the response it is.
		check := r.resp.RequestKind().ResponseKind()
		check.SetVersion(req.GetVersion())
		payload := out[8:]
		if r.resp.IsFlexible() {
			payload = payload[1:]
		}
		if err := check.ReadFrom(payload); err != nil {
			t.Fatalf("%s v%d response does not decode: %v", h.key.Name(), req.GetVersion(), err)
		}
	})
}

// TestWriteFuzzCorpus regenerates testdata/fuzz/FuzzRequest from valid
// requests of every registered key, when PASSBOOK_WRITE_FUZZ_CORPUS is set.
func TestWriteFuzzCorpus(t *testing.T) {
	if os.Getenv("PASSBOOK_WRITE_FUZZ_CORPUS") == "" {
		t.Skip("set PASSBOOK_WRITE_FUZZ_CORPUS=1 to regenerate the seed corpus")
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzRequest")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for idx, h := range registered() {
		for v := h.min; v <= h.max; v++ {
			req := sampleRequest(t, h.key)
			req.SetVersion(v)
			body := req.AppendTo(nil)
			content := fmt.Sprintf("go test fuzz v1\nbyte(%q)\nbyte(%q)\n[]byte(%q)\n", rune(idx), rune(v-h.min), body)
			name := filepath.Join(dir, fmt.Sprintf("%02d-%s-v%d", h.key, h.key.Name(), v))
			if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// sampleRequest is a plausible request of each registered key.
func sampleRequest(t *testing.T, key kmsg.Key) kmsg.Request {
	switch key {
	case kmsg.Produce:
		return produceRequest(0, -1, "fuzz", 1, testBatch(t, 3, 8))
	case kmsg.Fetch:
		req := kmsg.NewPtrFetchRequest()
		req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 10, 1, 1<<20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = "fuzz"
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.PartitionMaxBytes = 1 << 20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return req
	case kmsg.ListOffsets:
		req := kmsg.NewPtrListOffsetsRequest()
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = "fuzz"
		for _, ts := range []int64{-2, -1, 0} {
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Timestamp = ts
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		return req
	case kmsg.Metadata:
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr("fuzz")
		req.Topics = append(req.Topics, rt)
		return req
	case kmsg.CreateTopics:
		req := kmsg.NewPtrCreateTopicsRequest()
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "fuzz-new", 1, 1
		rc := kmsg.NewCreateTopicsRequestTopicConfig()
		rc.Name, rc.Value = "retention.ms", kmsg.StringPtr("60000")
		rt.Configs = append(rt.Configs, rc)
		req.Topics = append(req.Topics, rt)
		req.ValidateOnly = true
		return req
	case kmsg.DeleteTopics:
		req := kmsg.NewPtrDeleteTopicsRequest()
		req.TopicNames = []string{"fuzz-missing"}
		return req
	case kmsg.OffsetCommit:
		return commitRequest("fuzz-group", tm{"", -1}, "fuzz", map[int32]int64{0: 1, 1: 2})
	case kmsg.OffsetFetch:
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Group = "fuzz-group"
		req.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "fuzz", Partitions: []int32{0, 1}}}
		req.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "fuzz-group", Topics: []kmsg.OffsetFetchRequestGroupTopic{{Topic: "fuzz", Partitions: []int32{0}}}}}
		return req
	case kmsg.FindCoordinator:
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorKey, req.CoordinatorKeys = "fuzz-group", []string{"fuzz-group"}
		return req
	case kmsg.JoinGroup:
		return joinRequest(0, "fuzz-group", "", 10*time.Second, "range", "roundrobin")
	case kmsg.SyncGroup:
		req := kmsg.NewPtrSyncGroupRequest()
		req.Group, req.MemberID, req.Generation = "fuzz-group", "m", 1
		req.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: "m", MemberAssignment: []byte("a")}}
		return req
	case kmsg.Heartbeat:
		req := kmsg.NewPtrHeartbeatRequest()
		req.Group, req.MemberID, req.Generation = "fuzz-group", "m", 1
		return req
	case kmsg.LeaveGroup:
		req := kmsg.NewPtrLeaveGroupRequest()
		req.Group, req.MemberID = "fuzz-group", "m"
		req.Members = []kmsg.LeaveGroupRequestMember{{MemberID: "m"}}
		return req
	case kmsg.DescribeGroups:
		req := kmsg.NewPtrDescribeGroupsRequest()
		req.Groups = []string{"fuzz-group", "other"}
		return req
	case kmsg.DeleteGroups:
		req := kmsg.NewPtrDeleteGroupsRequest()
		req.Groups = []string{"fuzz-gone"}
		return req
	case kmsg.InitProducerID:
		req := kmsg.NewPtrInitProducerIDRequest()
		req.ProducerID, req.ProducerEpoch = -1, -1
		return req
	case kmsg.DescribeConfigs:
		req := kmsg.NewPtrDescribeConfigsRequest()
		rr := kmsg.NewDescribeConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, "fuzz"
		req.Resources = append(req.Resources, rr)
		return req
	}
	return key.Request()
}
