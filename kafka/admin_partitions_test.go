package kafka

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/acl"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// produceTo produces n records to partition p of topic, one batch each.
func produceTo(t *testing.T, cl *kgo.Client, topic string, p int32, from, n int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		r := &kgo.Record{Topic: topic, Partition: p, Value: value(i)}
		if err := cl.ProduceSync(context.Background(), r).FirstErr(); err != nil {
			t.Fatalf("produce to %s/%d: %v", topic, p, err)
		}
	}
}

func TestKadm_CreatePartitions(t *testing.T) {
	ts := startServer(t, nil)
	ts.createTopic(t, "grow", 2)
	ts.createTopic(t, "other", 1)
	cl := ts.client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	adm := kadm.NewClient(cl)
	ctx := context.Background()

	// validate_only: checked, nothing changed.
	if rs, err := adm.ValidateCreatePartitions(ctx, 3, "grow"); err != nil || rs["grow"].Err != nil {
		t.Fatalf("validate only: %v %+v", err, rs)
	}
	if n := partitionsOf(t, adm, "grow"); n != 2 {
		t.Fatalf("after validate_only: %d partitions, want 2", n)
	}
	rs, err := adm.CreatePartitions(ctx, 3, "grow")
	if err != nil || rs["grow"].Err != nil {
		t.Fatalf("CreatePartitions: %v %+v", err, rs)
	}
	if n := partitionsOf(t, adm, "grow"); n != 5 {
		t.Fatalf("Metadata: %d partitions, want 5", n)
	}
	topic, _ := ts.db.Topic("grow")
	if topic.Partitions() != 5 || topic.Config().Partitions != 5 {
		t.Fatalf("engine: %d partitions, config %d", topic.Partitions(), topic.Config().Partitions)
	}
	// The new partitions take records and serve them.
	produceTo(t, cl, "grow", 4, 0, 3)
	produceTo(t, cl, "grow", 0, 0, 1)
	ends, err := adm.ListEndOffsets(ctx, "grow")
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[int32]int64{0: 1, 2: 0, 3: 0, 4: 3} {
		if o, _ := ends.Lookup("grow", p); o.Offset != want {
			t.Errorf("partition %d ends at %d, want %d", p, o.Offset, want)
		}
	}
	rd := ts.client(t, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"grow": {4: kgo.NewOffset().AtStart()}}))
	fctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	var got []string
	for len(got) < 3 {
		fs := rd.PollFetches(fctx)
		if err := fctx.Err(); err != nil {
			t.Fatalf("fetch from the new partition: %v (got %q)", err, got)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if got[0] != string(value(0)) || got[2] != string(value(2)) {
		t.Errorf("read %q from the new partition", got)
	}

	for _, tc := range []struct {
		name  string
		topic string
		total int
		want  error
		msg   string
	}{
		{"the same count", "grow", 5, kerr.InvalidPartitions, "already has 5"},
		{"fewer", "grow", 3, kerr.InvalidPartitions, "would not be an increase"},
		{"over the most a topic may have", "grow", passbook.MaxPartitions + 1, kerr.InvalidPartitions, "at most 10,000"},
		{"unknown topic", "nosuch", 4, kerr.UnknownTopicOrPartition, ""},
	} {
		rs, err := adm.UpdatePartitions(ctx, tc.total, tc.topic)
		r := rs[tc.topic]
		if err != nil || !errors.Is(r.Err, tc.want) || !strings.Contains(r.ErrMessage, tc.msg) {
			t.Errorf("%s: %v, %v %q; want %v %q", tc.name, err, r.Err, r.ErrMessage, tc.want, tc.msg)
		}
	}
	if n := partitionsOf(t, adm, "grow"); n != 5 {
		t.Fatalf("after refused requests: %d partitions, want 5", n)
	}

	// Manual assignments: one replica, this broker, per new partition.
	for _, tc := range []struct {
		name   string
		assign [][]int32
		want   int16
	}{
		{"another broker", [][]int32{{1}}, kerr.InvalidReplicaAssignment.Code},
		{"two replicas", [][]int32{{0, 1}}, kerr.InvalidReplicaAssignment.Code},
		{"too few assignments", [][]int32{{0}}, kerr.InvalidReplicaAssignment.Code},
		{"this broker", [][]int32{{0}, {0}}, 0},
	} {
		req := kmsg.NewPtrCreatePartitionsRequest()
		rt := kmsg.NewCreatePartitionsRequestTopic()
		rt.Topic, rt.Count = "other", 3
		if tc.name == "another broker" || tc.name == "two replicas" {
			rt.Count = 2
		}
		for _, r := range tc.assign {
			a := kmsg.NewCreatePartitionsRequestTopicAssignment()
			a.Replicas = r
			rt.Assignment = append(rt.Assignment, a)
		}
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if got := resp.Topics[0].ErrorCode; got != tc.want {
			t.Errorf("%s: error %d, want %d (%v)", tc.name, got, tc.want, resp.Topics[0].ErrorMessage)
		}
	}
	if n := partitionsOf(t, adm, "other"); n != 3 {
		t.Errorf("other: %d partitions, want 3", n)
	}

	// A topic named twice: INVALID_REQUEST for it.
	req := kmsg.NewPtrCreatePartitionsRequest()
	for range 2 {
		rt := kmsg.NewCreatePartitionsRequestTopic()
		rt.Topic, rt.Count = "other", 9
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || len(resp.Topics) != 2 || resp.Topics[0].ErrorCode != kerr.InvalidRequest.Code {
		t.Errorf("topic named twice: %v %+v", err, resp)
	}
}

func partitionsOf(t *testing.T, adm *kadm.Client, topic string) int {
	t.Helper()
	td, err := adm.ListTopics(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	return len(td[topic].Partitions)
}

// TestCreatePartitions_GroupSeesNewPartitions: a consumer group on the
// topic rebalances onto the partitions added, at its next Metadata, and
// reads what is produced there.
func TestCreatePartitions_GroupSeesNewPartitions(t *testing.T) {
	ts := startServer(t, nil)
	ts.createTopic(t, "g", 1)
	cl := ts.client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	member := ts.client(t, kgo.ConsumerGroup("grp"), kgo.ConsumeTopics("g"), kgo.MetadataMaxAge(250*time.Millisecond), kgo.MetadataMinAge(100*time.Millisecond),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	produceTo(t, cl, "g", 0, 0, 1)
	wait := func(want string) {
		t.Helper()
		for {
			fs := member.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatalf("waiting for %q: %v", want, ctx.Err())
			}
			found := false
			fs.EachRecord(func(r *kgo.Record) { found = found || string(r.Value) == want })
			if found {
				return
			}
		}
	}
	wait(string(value(0)))
	if rs, err := kadm.NewClient(cl).CreatePartitions(ctx, 2, "g"); err != nil || rs["g"].Err != nil {
		t.Fatalf("CreatePartitions: %v %+v", err, rs)
	}
	fresh := ts.client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	produceTo(t, fresh, "g", 2, 1, 1)
	wait(string(value(1)))
}

func TestKadm_DeleteRecords(t *testing.T) {
	ts := startServer(t, nil)
	ts.createTopic(t, "trim", 2)
	if _, err := ts.db.CreateTopic("compacted", passbook.TopicConfig{CleanupPolicy: passbook.CleanupCompact}); err != nil {
		t.Fatal(err)
	}
	cl := ts.client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	adm := kadm.NewClient(cl)
	ctx := context.Background()
	produceTo(t, cl, "trim", 0, 0, 100)
	produceTo(t, cl, "trim", 1, 0, 10)

	del := func(topic string, p int32, at int64) kadm.DeleteRecordsResponse {
		t.Helper()
		var os kadm.Offsets
		os.Add(kadm.Offset{Topic: topic, Partition: p, At: at})
		rs, err := adm.DeleteRecords(ctx, os)
		if err != nil {
			t.Fatal(err)
		}
		r, _ := rs.Lookup(topic, p)
		return r
	}
	for _, tc := range []struct {
		name      string
		topic     string
		p         int32
		at        int64
		err       error
		watermark int64
	}{
		{"below the head", "trim", 0, 60, nil, 60},
		{"below the start changes nothing", "trim", 0, 30, nil, 60},
		{"past the high watermark", "trim", 0, 101, kerr.OffsetOutOfRange, -1},
		{"negative", "trim", 0, -5, kerr.OffsetOutOfRange, -1},
		{"-1 is the high watermark", "trim", 1, -1, nil, 10},
		{"a compact topic keeps its records", "compacted", 0, 0, kerr.PolicyViolation, -1},
	} {
		r := del(tc.topic, tc.p, tc.at)
		if !errors.Is(r.Err, tc.err) || r.Err == nil && tc.err != nil || r.LowWatermark != tc.watermark {
			t.Errorf("%s: %v, low watermark %d; want %v, %d", tc.name, r.Err, r.LowWatermark, tc.err, tc.watermark)
		}
	}
	// Unknown topics and partitions, on the wire (kadm sends only to
	// partitions Metadata knows).
	dreq := kmsg.NewPtrDeleteRecordsRequest()
	for _, tp := range []struct {
		topic string
		p     int32
	}{{"trim", 7}, {"nosuch", 0}} {
		rt := kmsg.NewDeleteRecordsRequestTopic()
		rt.Topic = tp.topic
		rp := kmsg.NewDeleteRecordsRequestTopicPartition()
		rp.Partition, rp.Offset = tp.p, 0
		rt.Partitions = append(rt.Partitions, rp)
		dreq.Topics = append(dreq.Topics, rt)
	}
	dresp := dialRaw(t, ts.addr).do(dreq).(*kmsg.DeleteRecordsResponse)
	for _, rt := range dresp.Topics {
		if p := rt.Partitions[0]; p.ErrorCode != kerr.UnknownTopicOrPartition.Code || p.LowWatermark != -1 {
			t.Errorf("%s/%d: error %d, low watermark %d", rt.Topic, p.Partition, p.ErrorCode, p.LowWatermark)
		}
	}
	// Kafka Streams' repartition topics: retention.ms=-1, purged by
	// DeleteRecords as their records are consumed.
	rt := "app-KSTREAM-REPARTITION-0000000001-repartition"
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"retention.ms": kmsg.StringPtr("-1"), "cleanup.policy": kmsg.StringPtr("delete")}, rt); err != nil {
		t.Fatal(err)
	}
	produceTo(t, cl, rt, 0, 0, 20)
	if r := del(rt, 0, 15); r.Err != nil || r.LowWatermark != 15 {
		t.Errorf("purge a repartition topic: %v, low watermark %d", r.Err, r.LowWatermark)
	}
	starts, err := adm.ListStartOffsets(ctx, "trim")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := starts.Lookup("trim", 0); o.Offset != 60 {
		t.Errorf("ListOffsets EARLIEST: %d, want 60", o.Offset)
	}
	if o, _ := starts.Lookup("trim", 1); o.Offset != 10 {
		t.Errorf("ListOffsets EARLIEST of the emptied partition: %d, want 10", o.Offset)
	}
	l, _ := ts.db.Topic("trim")
	if p0, _ := l.Partition(0); p0.StartOffset() != 60 {
		t.Errorf("engine start %d", p0.StartOffset())
	}

	// A consumer below the new start is told (OFFSET_OUT_OF_RANGE) and
	// its reset policy applies: earliest reads from 60.
	rd := ts.client(t, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"trim": {0: kgo.NewOffset().At(10)}}),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	fctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	for {
		fs := rd.PollFetches(fctx)
		if fctx.Err() != nil {
			t.Fatalf("consumer below the start: %v", fctx.Err())
		}
		var first *kgo.Record
		fs.EachRecord(func(r *kgo.Record) {
			if first == nil {
				first = r
			}
		})
		if first != nil {
			if first.Offset != 60 || string(first.Value) != string(value(60)) {
				t.Fatalf("first record after the reset: offset %d %q, want 60", first.Offset, first.Value)
			}
			break
		}
	}
	// Fetch at an offset below the start: OFFSET_OUT_OF_RANGE.
	freq := kmsg.NewPtrFetchRequest()
	freq.Version, freq.MaxWaitMillis, freq.MaxBytes = 11, 0, 1<<20 // by name
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "trim"
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes = 0, 59, 1<<20
	ft.Partitions = append(ft.Partitions, fp)
	freq.Topics = append(freq.Topics, ft)
	fresp := dialRaw(t, ts.addr).do(freq).(*kmsg.FetchResponse)
	if p := fresp.Topics[0].Partitions[0]; p.ErrorCode != kerr.OffsetOutOfRange.Code || p.LogStartOffset != 60 {
		t.Errorf("fetch at 59: error %d, log start %d; want OFFSET_OUT_OF_RANGE, 60", p.ErrorCode, p.LogStartOffset)
	}
}

func TestListOffsets_MaxTimestamp(t *testing.T) {
	for _, tc := range []struct {
		name   string
		ms     []int64
		offset int64
		ts     int64
	}{
		{"3000, 9000, 5000", []int64{3000, 9000, 5000}, 1, 9000},
		{"rising", []int64{1000, 2000, 3000}, 2, 3000},
		{"a tie: the first", []int64{4000, 8000, 1000, 8000}, 1, 8000},
		{"one record", []int64{7000}, 0, 7000},
		{"empty", nil, -1, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := startServer(t, nil)
			ts.createTopic(t, "times", 1)
			cl := ts.client(t, kgo.ProducerLinger(0))
			for i, ms := range tc.ms {
				r := &kgo.Record{Topic: "times", Value: value(i), Timestamp: time.UnixMilli(ms)}
				if err := cl.ProduceSync(context.Background(), r).FirstErr(); err != nil {
					t.Fatal(err)
				}
			}
			req := kmsg.NewPtrListOffsetsRequest()
			rt := kmsg.NewListOffsetsRequestTopic()
			rt.Topic = "times"
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Partition, rp.Timestamp = 0, maxTimestamp
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			resp, err := req.RequestWith(context.Background(), cl)
			if err != nil {
				t.Fatal(err)
			}
			p := resp.Topics[0].Partitions[0]
			if p.ErrorCode != 0 || p.Offset != tc.offset || p.Timestamp != tc.ts {
				t.Errorf("MAX_TIMESTAMP: error %d, offset %d, timestamp %d; want %d, %d", p.ErrorCode, p.Offset, p.Timestamp, tc.offset, tc.ts)
			}
		})
	}
}

func TestOffsetForLeaderEpoch(t *testing.T) {
	ts := startServer(t, nil)
	ts.createTopic(t, "e", 1)
	cl := ts.client(t, kgo.ProducerLinger(0))
	produceTo(t, cl, "e", 0, 0, 5)
	topic, _ := ts.db.Topic("e")
	if _, err := topic.DeleteRecords(0, 2); err != nil {
		t.Fatal(err)
	}
	// Metadata's leader epoch is the one every partition has.
	mreq := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr("e")
	mreq.Topics = append(mreq.Topics, mt)
	mresp, err := mreq.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	epoch := mresp.Topics[0].Partitions[0].LeaderEpoch
	for _, tc := range []struct {
		name           string
		version        int16
		partition      int32
		current, asked int32
		code           int16
		epoch          int32
		end            int64
	}{
		{"the current epoch ends at the high watermark", 4, 0, epoch, epoch, 0, epoch, 5},
		{"no current epoch given", 4, 0, -1, epoch, 0, epoch, 5},
		{"v0 has no current epoch", 0, 0, 7, epoch, 0, epoch, 5},
		{"an epoch the broker never had", 4, 0, -1, epoch + 3, 0, -1, -1},
		{"epoch -1", 4, 0, -1, -1, 0, -1, -1},
		{"below the earliest: the log start", 4, 0, -1, -2, 0, -2, 2},
		{"client's current epoch newer than the broker's", 4, 0, epoch + 1, epoch, kerr.UnknownLeaderEpoch.Code, -1, -1},
		{"client's current epoch older than the broker's", 4, 0, -2, epoch, kerr.FencedLeaderEpoch.Code, -1, -1},
		{"unknown partition", 4, 3, -1, epoch, kerr.UnknownTopicOrPartition.Code, -1, -1},
	} {
		req := kmsg.NewPtrOffsetForLeaderEpochRequest()
		req.Version, req.ReplicaID = tc.version, -1
		rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
		rt.Topic = "e"
		rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = tc.partition, tc.current, tc.asked
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		raw := dialRaw(t, ts.addr)
		resp := raw.do(req).(*kmsg.OffsetForLeaderEpochResponse)
		p := resp.Topics[0].Partitions[0]
		wantEpoch := tc.epoch
		if tc.version == 0 {
			wantEpoch = -1 // not in v0's response: the default
		}
		if p.ErrorCode != tc.code || p.LeaderEpoch != wantEpoch || p.EndOffset != tc.end {
			t.Errorf("%s: error %d, epoch %d, end %d; want %d, %d, %d", tc.name, p.ErrorCode, p.LeaderEpoch, p.EndOffset, tc.code, wantEpoch, tc.end)
		}
	}
}

func TestKadm_OneBrokerAdmin(t *testing.T) {
	ts := startServer(t, nil)
	ts.createTopic(t, "a", 2)
	cl := ts.client(t)
	adm := kadm.NewClient(cl)
	ctx := context.Background()

	// ElectLeaders: the leader is the preferred replica, always.
	var set kadm.TopicsSet
	set.Add("a", 0, 1)
	set.Add("nosuch", 0)
	for _, how := range []kadm.ElectLeadersHow{kadm.ElectPreferredReplica, kadm.ElectLiveReplica} {
		rs, err := adm.ElectLeaders(ctx, how, set)
		if err != nil {
			t.Fatal(err)
		}
		for p := range int32(2) {
			if r := rs["a"][p]; !errors.Is(r.Err, kerr.ElectionNotNeeded) {
				t.Errorf("election %v of a/%d: %v, want ELECTION_NOT_NEEDED", how, p, r.Err)
			}
		}
		if r := rs["nosuch"][0]; !errors.Is(r.Err, kerr.UnknownTopicOrPartition) {
			t.Errorf("election of nosuch/0: %v", r.Err)
		}
	}
	if rs, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, nil); err != nil || len(rs) != 0 {
		t.Errorf("election of every partition: %v %v; want nothing to elect", rs, err)
	}

	// ListPartitionReassignments: none, ever.
	if rs, err := adm.ListPartitionReassignments(ctx, nil); err != nil || len(rs) != 0 {
		t.Errorf("list reassignments: %v %v", rs, err)
	}
	if rs, err := adm.ListPartitionReassignments(ctx, set); err != nil || len(rs) != 0 {
		t.Errorf("list reassignments of a: %v %v", rs, err)
	}

	// AlterPartitionReassignments: to this broker a no-op, else refused.
	var req kadm.AlterPartitionAssignmentsReq
	req.Assign("a", 0, []int32{NodeID})
	req.Assign("a", 1, []int32{3})
	req.Assign("nosuch", 0, []int32{NodeID})
	rs, err := adm.AlterPartitionAssignments(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if r := rs["a"][0]; r.Err != nil {
		t.Errorf("reassign a/0 to this broker: %v", r.Err)
	}
	if r := rs["a"][1]; !errors.Is(r.Err, kerr.InvalidReplicaAssignment) || !strings.Contains(r.ErrMessage, "broker 3") {
		t.Errorf("reassign a/1 to broker 3: %v %q", r.Err, r.ErrMessage)
	}
	if r := rs["nosuch"][0]; !errors.Is(r.Err, kerr.UnknownTopicOrPartition) {
		t.Errorf("reassign nosuch/0: %v", r.Err)
	}

	// Client quotas: none in force, none can be set.
	dq, err := adm.DescribeClientQuotas(ctx, false, nil)
	if err != nil || len(dq) != 0 {
		t.Errorf("describe quotas: %v %v", dq, err)
	}
	user := "alice"
	aq, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{
		Entity: kadm.ClientQuotaEntity{{Type: "user", Name: &user}},
		Ops:    []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: 1024}},
	}})
	if err != nil || len(aq) != 1 || !errors.Is(aq[0].Err, kerr.PolicyViolation) || !strings.Contains(aq[0].ErrMessage, "does not enforce client quotas") {
		t.Errorf("alter quotas: %v %+v", err, aq)
	}
	aq, err = adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{
		Entity: kadm.ClientQuotaEntity{{Type: "user", Name: &user}},
		Ops:    []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Remove: true}},
	}})
	if err != nil || len(aq) != 1 || aq[0].Err != nil {
		t.Errorf("remove quotas: %v %+v", err, aq)
	}
}

func TestDescribeTopicPartitions(t *testing.T) {
	ts := startServer(t, nil)
	ts.createTopic(t, "t1", 3)
	ts.createTopic(t, "t2", 2)
	ts.createTopic(t, "t3", 1)
	cl := ts.client(t)
	ctx := context.Background()
	type page struct {
		topics []string // topic:partitions
		next   string
	}
	describe := func(topics []string, limit int32, cursor *kmsg.DescribeTopicPartitionsRequestCursor) page {
		t.Helper()
		req := kmsg.NewPtrDescribeTopicPartitionsRequest()
		for _, n := range topics {
			rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
			rt.Topic = n
			req.Topics = append(req.Topics, rt)
		}
		req.ResponsePartitionLimit, req.Cursor = limit, cursor
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		var pg page
		for _, rt := range resp.Topics {
			s := *rt.Topic + ":"
			for _, p := range rt.Partitions {
				s += string(rune('0' + p.Partition))
				if p.LeaderID != NodeID || len(p.Replicas) != 1 || len(p.ISR) != 1 {
					t.Errorf("%s/%d: leader %d replicas %v isr %v", *rt.Topic, p.Partition, p.LeaderID, p.Replicas, p.ISR)
				}
			}
			if rt.ErrorCode != 0 {
				s += kerr.ErrorForCode(rt.ErrorCode).Error()
			} else if tp, _ := ts.db.Topic(*rt.Topic); rt.TopicID != tp.ID() {
				t.Errorf("%s: topic ID %x, want %x", *rt.Topic, rt.TopicID, tp.ID())
			}
			pg.topics = append(pg.topics, s)
		}
		if c := resp.NextCursor; c != nil {
			pg.next = c.Topic + ":" + string(rune('0'+c.Partition))
		}
		return pg
	}
	cur := func(topic string, p int32) *kmsg.DescribeTopicPartitionsRequestCursor {
		return &kmsg.DescribeTopicPartitionsRequestCursor{Topic: topic, Partition: p}
	}
	for _, tc := range []struct {
		name   string
		topics []string
		limit  int32
		cursor *kmsg.DescribeTopicPartitionsRequestCursor
		want   page
	}{
		{"all", nil, 2000, nil, page{[]string{"t1:012", "t2:01", "t3:0"}, ""}},
		{"a page ending inside a topic", nil, 4, nil, page{[]string{"t1:012", "t2:0"}, "t2:1"}},
		{"the next page", nil, 4, cur("t2", 1), page{[]string{"t2:1", "t3:0"}, ""}},
		{"a page ending with a topic", nil, 3, nil, page{[]string{"t1:012"}, "t2:0"}},
		{"named, sorted, an unknown one", []string{"t3", "nosuch", "t1"}, 2000, nil,
			page{[]string{"nosuch:" + kerr.UnknownTopicOrPartition.Error(), "t1:012", "t3:0"}, ""}},
		{"named from a cursor", []string{"t3", "t1"}, 2000, cur("t3", 0), page{[]string{"t3:0"}, ""}},
	} {
		if got := describe(tc.topics, tc.limit, tc.cursor); strings.Join(got.topics, " ") != strings.Join(tc.want.topics, " ") || got.next != tc.want.next {
			t.Errorf("%s: got %v next %q, want %v next %q", tc.name, got.topics, got.next, tc.want.topics, tc.want.next)
		}
	}
}

// TestACL_AdminAPIs: what each admin API asks, for alice allowed and
// denied (Kafka 4's KafkaApis and controller).
func TestACL_AdminAPIs(t *testing.T) {
	w := newACLWorld(t)
	grow := func() int16 {
		req := kmsg.NewPtrCreatePartitionsRequest()
		rt := kmsg.NewCreatePartitionsRequestTopic()
		rt.Topic, rt.Count = "orders", 2
		req.Topics = append(req.Topics, rt)
		req.ValidateOnly = true
		return seedRequest[*kmsg.CreatePartitionsResponse](t, w.alice, req).Topics[0].ErrorCode
	}
	trim := func() int16 {
		req := kmsg.NewPtrDeleteRecordsRequest()
		rt := kmsg.NewDeleteRecordsRequestTopic()
		rt.Topic = "orders"
		rp := kmsg.NewDeleteRecordsRequestTopicPartition()
		rp.Offset = 0
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return seedRequest[*kmsg.DeleteRecordsResponse](t, w.alice, req).Topics[0].Partitions[0].ErrorCode
	}
	epoch := func() int16 {
		req := kmsg.NewPtrOffsetForLeaderEpochRequest()
		req.ReplicaID = -1
		rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
		rt.Topic = "orders"
		rt.Partitions = append(rt.Partitions, kmsg.NewOffsetForLeaderEpochRequestTopicPartition())
		req.Topics = append(req.Topics, rt)
		return seedRequest[*kmsg.OffsetForLeaderEpochResponse](t, w.alice, req).Topics[0].Partitions[0].ErrorCode
	}
	elect := func() int16 {
		req := kmsg.NewPtrElectLeadersRequest()
		return seedRequest[*kmsg.ElectLeadersResponse](t, w.alice, req).ErrorCode
	}
	listReassign := func() int16 {
		return seedRequest[*kmsg.ListPartitionReassignmentsResponse](t, w.alice, kmsg.NewPtrListPartitionReassignmentsRequest()).ErrorCode
	}
	reassign := func() int16 {
		req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
		return seedRequest[*kmsg.AlterPartitionAssignmentsResponse](t, w.alice, req).ErrorCode
	}
	quotas := func() int16 {
		return seedRequest[*kmsg.DescribeClientQuotasResponse](t, w.alice, kmsg.NewPtrDescribeClientQuotasRequest()).ErrorCode
	}
	setQuota := func() int16 {
		req := kmsg.NewPtrAlterClientQuotasRequest()
		e := kmsg.NewAlterClientQuotasRequestEntry()
		ent := kmsg.NewAlterClientQuotasRequestEntryEntity()
		ent.Type = "user"
		e.Entity = append(e.Entity, ent)
		op := kmsg.NewAlterClientQuotasRequestEntryOp()
		op.Key, op.Remove = "producer_byte_rate", true
		e.Ops = append(e.Ops, op)
		req.Entries = append(req.Entries, e)
		return seedRequest[*kmsg.AlterClientQuotasResponse](t, w.alice, req).Entries[0].ErrorCode
	}
	describe := func() int16 {
		req := kmsg.NewPtrDescribeTopicPartitionsRequest()
		rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
		rt.Topic = "orders"
		req.Topics = append(req.Topics, rt)
		return seedRequest[*kmsg.DescribeTopicPartitionsResponse](t, w.alice, req).Topics[0].ErrorCode
	}
	const topicNo, clusterNo = 29, 31
	for _, tc := range []struct {
		name   string
		call   func() int16
		grant  acl.Binding
		denied int16
	}{
		{"CreatePartitions", grow, topicACL(acl.Literal, "orders", acl.Alter), topicNo},
		{"DeleteRecords", trim, topicACL(acl.Literal, "orders", acl.Delete), topicNo},
		{"OffsetForLeaderEpoch, by topic", epoch, topicACL(acl.Literal, "orders", acl.Describe), topicNo},
		{"OffsetForLeaderEpoch, a follower", epoch, clusterACL(acl.ClusterAction), topicNo},
		{"ElectLeaders", elect, clusterACL(acl.Alter), clusterNo},
		{"ListPartitionReassignments", listReassign, clusterACL(acl.Describe), clusterNo},
		{"AlterPartitionReassignments", reassign, clusterACL(acl.Alter), clusterNo},
		{"DescribeClientQuotas", quotas, clusterACL(acl.DescribeConfigs), clusterNo},
		{"AlterClientQuotas", setQuota, clusterACL(acl.AlterConfigs), clusterNo},
		{"DescribeTopicPartitions", describe, topicACL(acl.Literal, "orders", acl.Describe), topicNo},
	} {
		w.grant(t)
		if got := tc.call(); got != tc.denied {
			t.Errorf("%s without ACLs: error %d, want %d", tc.name, got, tc.denied)
		}
		w.grant(t, tc.grant)
		if got := tc.call(); got != 0 {
			t.Errorf("%s with %v: error %d, want none", tc.name, tc.grant, got)
		}
	}
	// All topics: only those alice may describe, the others left out.
	w.grant(t, topicACL(acl.Literal, "orders", acl.Describe))
	resp := seedRequest[*kmsg.DescribeTopicPartitionsResponse](t, w.alice, kmsg.NewPtrDescribeTopicPartitionsRequest())
	if len(resp.Topics) != 1 || *resp.Topics[0].Topic != "orders" || resp.Topics[0].ErrorCode != 0 {
		t.Errorf("DescribeTopicPartitions of every topic: %+v; want orders alone", resp.Topics)
	}
}
