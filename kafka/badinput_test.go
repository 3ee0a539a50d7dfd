package kafka

import (
	"context"
	"encoding/binary"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/batch"
	"github.com/passbook-log/passbook/offsets"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// testBatch is a valid RecordBatch v2 of n records of size bytes each.
func testBatch(t testing.TB, n, size int) []byte {
	t.Helper()
	recs := make([]batch.Record, n)
	for i := range recs {
		recs[i] = batch.Record{Key: []byte("k"), Value: make([]byte, size)}
	}
	b, err := batch.Append(nil, recs, batch.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func produceRequest(version, acks int16, topic string, partition int32, records []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = version, acks, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = partition, records
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

func TestBadInput_ProduceRefusedLogUnchanged(t *testing.T) {
	ts := startServer(t, nil)
	topic := ts.createTopic(t, "guarded", 1)
	if _, err := ts.db.CreateTopic("small", passbook.TopicConfig{MaxRecordBytes: 100}); err != nil {
		t.Fatal(err)
	}
	l, _ := topic.Partition(0)
	valid := testBatch(t, 3, 20)
	mutate := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), valid...)) }
	setLength := func(b []byte, delta int) []byte {
		binary.BigEndian.PutUint32(b[8:], uint32(int(binary.BigEndian.Uint32(b[8:]))+delta))
		return b
	}
	rc := dialRaw(t, ts.addr)
	for _, tc := range []struct {
		name      string
		acks      int16
		topic     string
		partition int32
		records   []byte
		want      *kerr.Error
	}{
		{"wrong crc", -1, "guarded", 0, mutate(func(b []byte) []byte { b[len(b)-1] ^= 0xff; return b }), kerr.CorruptMessage},
		{"crc field wrong", 1, "guarded", 0, mutate(func(b []byte) []byte { b[17] ^= 1; return b }), kerr.CorruptMessage},
		{"length says more than sent", -1, "guarded", 0, mutate(func(b []byte) []byte { return setLength(b, 10) }), kerr.CorruptMessage},
		{"length says less than sent", -1, "guarded", 0, mutate(func(b []byte) []byte { return setLength(b, -10) }), kerr.CorruptMessage},
		{"length below the header", -1, "guarded", 0, mutate(func(b []byte) []byte { return setLength(b, -int(binary.BigEndian.Uint32(b[8:]))) }), kerr.CorruptMessage},
		{"truncated batch", -1, "guarded", 0, valid[:len(valid)-5], kerr.CorruptMessage},
		{"two batches in one", -1, "guarded", 0, append(append([]byte(nil), valid...), valid...), kerr.CorruptMessage},
		{"shorter than a header", -1, "guarded", 0, valid[:30], kerr.CorruptMessage},
		{"no records at all", -1, "guarded", 0, nil, kerr.CorruptMessage},
		{"magic 1", -1, "guarded", 0, mutate(func(b []byte) []byte { b[16] = 1; return b }), kerr.UnsupportedForMessageFormat},
		{"record over max.message.bytes", -1, "small", 0, testBatch(t, 1, 200), kerr.MessageTooLarge},
		{"unknown topic", -1, "nope", 0, valid, kerr.UnknownTopicOrPartition},
		{"unknown partition", -1, "guarded", 7, valid, kerr.UnknownTopicOrPartition},
		{"invalid topic name", -1, "bad/name", 0, valid, kerr.InvalidTopicException},
		{"acks=2", 2, "guarded", 0, valid, kerr.InvalidRequiredAcks},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := rc.do(produceRequest(7, tc.acks, tc.topic, tc.partition, tc.records)).(*kmsg.ProduceResponse)
			p := resp.Topics[0].Partitions[0]
			if p.ErrorCode != tc.want.Code {
				t.Fatalf("error %v, want %v", kerr.ErrorForCode(p.ErrorCode), tc.want)
			}
			if l.Head() != 0 {
				t.Fatalf("head %d: the refused batch was written", l.Head())
			}
		})
	}
	// The same connection still works, and the valid batch lands at 0.
	resp := rc.do(produceRequest(9, -1, "guarded", 0, valid)).(*kmsg.ProduceResponse)
	if p := resp.Topics[0].Partitions[0]; p.ErrorCode != 0 || p.BaseOffset != 0 || l.Head() != 3 {
		t.Fatalf("valid batch after the bad ones: %+v, head %d", p, l.Head())
	}
}

func TestBadInput_ConnectionClosed(t *testing.T) {
	ts := startServer(t, &Options{SocketRequestMaxBytes: 64 << 10})
	topic := ts.createTopic(t, "guarded", 1)
	l, _ := topic.Partition(0)
	f := kmsg.NewRequestFormatter()
	frame := func(req kmsg.Request) []byte { return f.AppendRequest(nil, req, 1) }
	header := func(key, version int16) []byte {
		b := binary.BigEndian.AppendUint16(nil, uint16(key))
		b = binary.BigEndian.AppendUint16(b, uint16(version))
		b = binary.BigEndian.AppendUint32(b, 1)
		return binary.BigEndian.AppendUint16(b, 0xffff) // null client id
	}
	sized := func(body []byte) []byte {
		return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
	}
	metadata := kmsg.NewPtrMetadataRequest()
	metadata.Version = 1
	fetch3 := kmsg.NewPtrFetchRequest()
	fetch3.Version = 3

	for _, tc := range []struct {
		name string
		send []byte
	}{
		{"truncated frame", frame(produceRequest(7, -1, "guarded", 0, testBatch(t, 10, 10)))[:60]},
		{"truncated size", []byte{0, 0}},
		{"frame shorter than a header", sized([]byte{0, 3, 0, 1})},
		{"negative frame size", []byte{0xff, 0xff, 0xff, 0xf0, 1, 2, 3}},
		{"request over the size limit", frame(produceRequest(7, -1, "guarded", 0, testBatch(t, 100, 1000)))},
		{"unknown API key", sized(header(999, 0))},
		{"API key not served (AlterReplicaLogDirs)", sized(append(header(34, 0), make([]byte, 40)...))},
		{"version not served (Fetch v3)", frame(fetch3)},
		{"version not served (Produce v14)", sized(append(header(0, 14), 0))},
		{"malformed body", sized(append(header(3, 1), 0x7f, 0xff, 0xff, 0xff))},
		{"client id longer than the frame", sized(append(header(3, 1)[:8], 0x10, 0))},
		{"malformed header tags", sized(append(header(3, 9), 5, 1))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc := dialRaw(t, ts.addr)
			rc.write(tc.send)
			if strings.HasPrefix(tc.name, "truncated") {
				// The client gives up mid-frame: EOF inside a frame.
				rc.nc.(*net.TCPConn).CloseWrite()
			}
			if !rc.closedByServer() {
				t.Fatal("the server kept the connection open")
			}
			if l.Head() != 0 {
				t.Fatalf("head %d: the log changed", l.Head())
			}
			// Other connections are unaffected.
			if resp := dialRaw(t, ts.addr).do(metadata).(*kmsg.MetadataResponse); len(resp.Brokers) != 1 {
				t.Fatalf("metadata after: %+v", resp)
			}
		})
	}
}

func TestApiVersions_UnknownVersion(t *testing.T) {
	ts := startServer(t, nil)
	rc := dialRaw(t, ts.addr)
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 99
	rc.write(rc.frame(req)) // the formatter writes whatever version it is told
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = 0
	if err := rc.read(resp, false); err != nil {
		t.Fatal(err)
	}
	if resp.ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("error %d, want UNSUPPORTED_VERSION", resp.ErrorCode)
	}
	want := map[int16][2]int16{0: {0, 13}, 1: {4, 18}, 2: {1, 11}, 3: {0, 13}, 8: {0, 10}, 9: {0, 10}, 10: {0, 6},
		11: {0, 9}, 12: {0, 4}, 13: {0, 5}, 14: {0, 5}, 15: {0, 5}, 16: {0, 5}, 17: {0, 1}, 18: {0, 5}, 19: {2, 7}, 20: {1, 6},
		21: {0, 2}, 22: {0, 5}, 23: {0, 4}, 24: {0, 5}, 25: {0, 4}, 26: {0, 4}, 28: {0, 4},
		29: {1, 3}, 30: {1, 3}, 31: {1, 3}, 32: {1, 4}, 33: {0, 2}, 35: {0, 5}, 36: {0, 2}, 37: {0, 3},
		42: {0, 2}, 43: {0, 2}, 44: {0, 1}, 45: {0, 1}, 46: {0, 0}, 47: {0, 0}, 48: {0, 1}, 49: {0, 1}, 50: {0, 0}, 51: {0, 0},
		60: {0, 2}, 61: {0, 0}, 65: {0, 0}, 66: {0, 2}, 68: {0, 1}, 69: {0, 1}, 75: {0, 0}}
	advertised := len(want)
	for _, k := range resp.ApiKeys {
		if w, ok := want[k.ApiKey]; !ok || w != [2]int16{k.MinVersion, k.MaxVersion} {
			t.Errorf("key %d: v%d–v%d, want %v", k.ApiKey, k.MinVersion, k.MaxVersion, w)
		}
		delete(want, k.ApiKey)
	}
	if len(want) > 0 {
		t.Errorf("not advertised: %v", want)
	}
	// The connection stays open; the client retries at a version listed.
	req.Version = 3
	if resp := rc.do(req).(*kmsg.ApiVersionsResponse); resp.ErrorCode != 0 || len(resp.ApiKeys) != advertised {
		t.Fatalf("ApiVersions v3: %+v", resp)
	}
}

func TestPipelining_ResponsesInOrder(t *testing.T) {
	ts := startServer(t, nil)
	topic := ts.createTopic(t, "pipe", 1)
	l, _ := topic.Partition(0)
	rc := dialRaw(t, ts.addr)
	meta := kmsg.NewPtrMetadataRequest()
	meta.Version = 12
	// A produce with acks=0 (no response), acks=all, acks=1, metadata,
	// all in one write: the responses come back in order, none for acks=0.
	var buf []byte
	buf = append(buf, rc.frame(produceRequest(9, 0, "pipe", 0, testBatch(t, 5, 10)))...)
	buf = append(buf, rc.frame(produceRequest(9, -1, "pipe", 0, testBatch(t, 5, 10)))...)
	buf = append(buf, rc.frame(produceRequest(3, 1, "pipe", 0, testBatch(t, 5, 10)))...)
	buf = append(buf, rc.frame(meta)...)
	rc.write(buf)
	last := rc.corr
	for i, want := range []struct {
		corr int32
		resp kmsg.Response
		base int64
	}{{last - 2, kmsg.NewPtrProduceResponse(), 5}, {last - 1, kmsg.NewPtrProduceResponse(), 10}, {last, kmsg.NewPtrMetadataResponse(), 0}} {
		rc.corr = want.corr
		want.resp.SetVersion([]int16{9, 3, 12}[i])
		if err := rc.read(want.resp, want.resp.IsFlexible()); err != nil {
			t.Fatalf("response %d: %v", i, err)
		}
		if p, ok := want.resp.(*kmsg.ProduceResponse); ok && p.Topics[0].Partitions[0].BaseOffset != want.base {
			t.Fatalf("response %d: base offset %d, want %d", i, p.Topics[0].Partitions[0].BaseOffset, want.base)
		}
	}
	if l.Head() != 15 {
		t.Fatalf("head %d, want 15", l.Head())
	}
}

func TestFetch_LongPoll(t *testing.T) {
	ts := startServer(t, nil)
	topic := ts.createTopic(t, "poll", 1)
	l, _ := topic.Partition(0)
	fetchAt := func(offset int64, wait time.Duration) *kmsg.FetchRequest {
		req := kmsg.NewPtrFetchRequest()
		req.Version, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 11, int32(wait.Milliseconds()), 1, 1<<20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = "poll"
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.FetchOffset, rp.PartitionMaxBytes = offset, 1<<20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return req
	}
	rc := dialRaw(t, ts.addr)

	// Nothing arrives: the fetch waits max_wait_ms, then answers empty
	// (an empty record set, not null).
	began := time.Now()
	resp := rc.do(fetchAt(0, 700*time.Millisecond)).(*kmsg.FetchResponse)
	p := resp.Topics[0].Partitions[0]
	if el := time.Since(began); el < 650*time.Millisecond || el > 5*time.Second {
		t.Fatalf("empty fetch returned after %v, want about 700ms", el)
	}
	if p.ErrorCode != 0 || p.RecordBatches == nil || len(p.RecordBatches) != 0 || p.HighWatermark != 0 || p.PreferredReadReplica != -1 {
		t.Fatalf("empty fetch: %+v", p)
	}

	// A record arrives 300ms into a 10s wait: the fetch answers with it.
	go func() {
		time.Sleep(300 * time.Millisecond)
		if _, err := l.AppendBatch(testBatch(t, 2, 10), 0); err != nil {
			t.Error(err)
		}
	}()
	began = time.Now()
	resp = rc.do(fetchAt(0, 10*time.Second)).(*kmsg.FetchResponse)
	p = resp.Topics[0].Partitions[0]
	if el := time.Since(began); el < 250*time.Millisecond || el > 5*time.Second {
		t.Fatalf("fetch returned after %v, want about 300ms", el)
	}
	if h, err := batch.Check(p.RecordBatches); err != nil || h.RecordCount != 2 || p.HighWatermark != 2 {
		t.Fatalf("fetch after append: %v %+v hw %d", err, h, p.HighWatermark)
	}

	// Past the head, or before the start: OFFSET_OUT_OF_RANGE at once.
	resp = rc.do(fetchAt(3, 10*time.Second)).(*kmsg.FetchResponse)
	if p := resp.Topics[0].Partitions[0]; p.ErrorCode != kerr.OffsetOutOfRange.Code || p.HighWatermark != 2 || p.LogStartOffset != 0 {
		t.Fatalf("fetch past the head: %+v", p)
	}
}

// Group requests over the wire: a JoinGroup with no protocols, a commit
// from a stale generation and a commit to an unknown topic are refused,
// and the offset store is untouched.
func TestBadInput_Groups(t *testing.T) {
	ts := startServer(t, nil)
	ts.createTopic(t, "known", 2)
	rc := dialRaw(t, ts.addr)
	join := func(memberID string, protocols ...string) *kmsg.JoinGroupResponse {
		return rc.do(joinRequest(9, "bad", memberID, 10*time.Second, protocols...)).(*kmsg.JoinGroupResponse)
	}
	if resp := join(""); resp.ErrorCode != kerr.InconsistentGroupProtocol.Code {
		t.Fatalf("JoinGroup with no protocols: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	first := join("", "range")
	resp := join(first.MemberID, "range") // alone: answered at once
	if resp.ErrorCode != 0 || resp.Generation != 1 {
		t.Fatalf("join: %+v", resp)
	}
	m := tm{resp.MemberID, resp.Generation}
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Group, sync.MemberID, sync.Generation = "bad", m.id, m.gen
	if r := rc.do(sync).(*kmsg.SyncGroupResponse); r.ErrorCode != 0 {
		t.Fatalf("sync: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	commit := func(m tm, topic string) int16 {
		r := rc.do(commitRequest("bad", m, topic, map[int32]int64{0: 5})).(*kmsg.OffsetCommitResponse)
		return r.Topics[0].Partitions[0].ErrorCode
	}
	for _, tc := range []struct {
		name  string
		m     tm
		topic string
		want  *kerr.Error
	}{
		{"a stale generation", tm{m.id, m.gen - 1}, "known", kerr.IllegalGeneration},
		{"a future generation", tm{m.id, m.gen + 1}, "known", kerr.IllegalGeneration},
		{"an unknown member", tm{"someone", m.gen}, "known", kerr.UnknownMemberID},
		{"an unknown topic", m, "unknown", kerr.UnknownTopicOrPartition},
	} {
		if code := commit(tc.m, tc.topic); code != tc.want.Code {
			t.Errorf("commit from %s: %v, want %v", tc.name, kerr.ErrorForCode(code), tc.want)
		}
	}
	if list, _ := ts.db.Offsets().List(context.Background(), offsets.Filter{}); len(list) != 0 {
		t.Fatalf("refused commits were written: %+v", list)
	}
	if code := commit(m, "known"); code != 0 {
		t.Fatalf("commit at the generation: %v", kerr.ErrorForCode(code))
	}
}
