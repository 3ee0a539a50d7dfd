package main

// Hostile producers against `passbook serve` run as a real process (the
// helpers are in hostile_kafka_test.go): batches whose counts claim more
// than their bytes hold (the header bomb), and producer clocks that would
// drive the broker (the timestamp storm).

import (
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/passbook-log/passbook/batch"
	"github.com/passbook-log/passbook/internal/thousands"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// headerBombBatch builds, by hand, a zstd RecordBatch v2 of one record
// with n empty headers (two bytes each: a key of length 0, a null value)
// whose header count says claimed.
func headerBombBatch(t testing.TB, n, claimed int) []byte {
	t.Helper()
	body := []byte{0}                   // attributes
	body = binary.AppendVarint(body, 0) // timestamp delta
	body = binary.AppendVarint(body, 0) // offset delta
	body = binary.AppendVarint(body, -1)
	body = binary.AppendVarint(body, 1)
	body = append(body, 'v')
	body = binary.AppendVarint(body, int64(claimed))
	hdrs := make([]byte, 2*n)
	for i := 1; i < len(hdrs); i += 2 {
		hdrs[i] = 1 // value length −1 (zigzag)
	}
	body = append(body, hdrs...)
	records := append(binary.AppendVarint(nil, int64(len(body))), body...)
	z, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedBestCompression))
	if err != nil {
		t.Fatal(err)
	}
	compressed := z.EncodeAll(records, nil)
	z.Close()

	now := time.Now().UnixMilli()
	b := make([]byte, 0, 61+len(compressed))
	b = binary.BigEndian.AppendUint64(b, 0) // base offset
	b = binary.BigEndian.AppendUint32(b, 0) // length, below
	b = binary.BigEndian.AppendUint32(b, 0) // partition leader epoch
	b = append(b, 2)                        // magic
	b = binary.BigEndian.AppendUint32(b, 0) // CRC, below
	b = binary.BigEndian.AppendUint16(b, 4) // attributes: zstd
	b = binary.BigEndian.AppendUint32(b, 0) // last offset delta
	b = binary.BigEndian.AppendUint64(b, uint64(now))
	b = binary.BigEndian.AppendUint64(b, uint64(now))
	b = binary.BigEndian.AppendUint64(b, ^uint64(0)) // producer id −1
	b = binary.BigEndian.AppendUint16(b, ^uint16(0)) // producer epoch −1
	b = binary.BigEndian.AppendUint32(b, ^uint32(0)) // base sequence −1
	b = binary.BigEndian.AppendUint32(b, 1)          // record count
	b = append(b, compressed...)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// produceRaw sends one batch to partition 0 of topic with acks=-1 and
// returns the partition's error code.
func produceRaw(ctx context.Context, cl *kgo.Client, topic string, b []byte) (int16, error) {
	id, err := topicID(ctx, cl, topic) // Produce v13 names the topic by ID
	if err != nil {
		return 0, err
	}
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 10_000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic, rt.TopicID = topic, id
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = b
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return 0, err
	}
	return resp.Topics[0].Partitions[0].ErrorCode, nil
}

func createTopic(t *testing.T, cl *kgo.Client, topic string, configs map[string]*string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, configs, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
}

func endOffset(t *testing.T, cl *kgo.Client, topic string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	o, ok := ends.Lookup(topic, 0)
	if !ok || o.Err != nil {
		t.Fatalf("end offset of %s: %v", topic, o.Err)
	}
	return o.Offset
}

// TestHostile_HeaderBomb: a 2 KB produce request carrying a zstd batch
// whose one record has 31 million empty headers (62 MB decompressed) is
// refused with MESSAGE_TOO_LARGE — the headers count against
// max.message.bytes — and one whose header count claims 31 million with
// ten headers' bytes is refused with INVALID_RECORD, before anything is
// allocated for them. Nothing is stored, memory stays within a budget,
// and a normal client keeps producing and fetching meanwhile.
func TestHostile_HeaderBomb(t *testing.T) {
	p := startServe(t)
	n := newNormalClient(t, p.kafkaAddr, "normal")
	if err := n.round(context.Background()); err != nil {
		t.Fatal(err)
	}
	createTopic(t, n.cl, "bomb", nil)
	base := p.fds(t)

	bomb := headerBombBatch(t, 31_000_000, 31_000_000)
	liar := headerBombBatch(t, 10, 31_000_000)
	t.Logf("the bomb: %s bytes on the wire, 31,000,000 headers; the liar: %s bytes", thousands.Int(int64(len(bomb))), thousands.Int(int64(len(liar))))
	if len(bomb) > 8<<10 {
		t.Fatalf("the bomb is %d bytes, want a few KB", len(bomb))
	}

	const rounds = 8 // per connection
	cases := []struct {
		name string
		b    []byte
		want int16
	}{
		{"31 million empty headers", bomb, kerr.MessageTooLarge.Code},
		{"a header count of 31 million over 20 bytes", liar, kerr.InvalidRecord.Code},
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var slowest time.Duration
	for _, c := range cases {
		for range 2 { // two connections each
			cl, err := kgo.NewClient(kgo.SeedBrokers(p.kafkaAddr))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			wg.Go(func() {
				for range rounds {
					ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
					began := time.Now()
					code, err := produceRaw(ctx, cl, "bomb", append([]byte(nil), c.b...))
					took := time.Since(began)
					cancel()
					if err != nil {
						t.Errorf("%s: %v", c.name, err)
						return
					}
					if code != c.want {
						t.Errorf("%s: error code %d (%v), want %d (%v)", c.name, code, kerr.ErrorForCode(code), c.want, kerr.ErrorForCode(c.want))
						return
					}
					mu.Lock()
					slowest = max(slowest, took)
					mu.Unlock()
				}
			})
		}
	}
	n.during(t, 3*time.Second)
	wg.Wait()
	t.Logf("%d hostile batches refused, the slowest answer in %v", 4*rounds, slowest)

	if got := endOffset(t, n.cl, "bomb"); got != 0 {
		t.Errorf("the bomb topic's end offset is %d, want 0: nothing stored", got)
	}
	for reason, want := range map[string]float64{"too_large": 2 * rounds, "invalid_record": 2 * rounds} {
		name := `passbook_topic_refused_appends_total{reason="` + reason + `",topic="bomb"}`
		if got := p.metric(t, name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	budget(t, "peak RSS", p.peakRSS(t), 400*mib)
	fdBudget(t, "descriptors", p.fds(t), base+60) // the attackers' own connections, with room
}

// TestHostile_TimestampStorm: 2,000 batches stamped 1 ms after 1970 (in
// Kafka's default message.timestamp.before.max.ms, no limit) go into one
// segment: the time-based roll counts by the broker's clock, so the
// descriptors stay put. A record stamped in the year 9999 is refused with
// INVALID_TIMESTAMP (message.timestamp.after.max.ms, 1 hour by default),
// and so is a 1970 record on a topic created with
// message.timestamp.before.max.ms=86400000. A normal client keeps
// producing and fetching meanwhile.
func TestHostile_TimestampStorm(t *testing.T) {
	p := startServe(t)
	n := newNormalClient(t, p.kafkaAddr, "normal")
	if err := n.round(context.Background()); err != nil {
		t.Fatal(err)
	}
	createTopic(t, n.cl, "storm", nil)
	day := "86400000"
	createTopic(t, n.cl, "strict", map[string]*string{"message.timestamp.before.max.ms": &day})
	base := p.fds(t)

	const producers, each = 4, 500
	var wg sync.WaitGroup
	for i := range producers {
		cl, err := kgo.NewClient(kgo.SeedBrokers(p.kafkaAddr), kgo.DefaultProduceTopic("storm"))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			for j := range each {
				// One record per request: one batch each.
				r := &kgo.Record{Value: []byte("old"), Timestamp: time.UnixMilli(int64(1 + i*each + j))}
				if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
					t.Errorf("producer %d, batch %d: %v", i, j, err)
					return
				}
			}
		})
	}
	n.during(t, 2*time.Second)
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	if got := p.metric(t, `passbook_partition_segments{partition="0",topic="storm"}`); got != 1 {
		t.Errorf("2,000 batches stamped 1970 made %v segments, want 1", got)
	}
	// Before, a segment (3 descriptors) per batch: 6,000 more. Now the
	// producers' connections, with room.
	fdBudget(t, "descriptors after the storm", p.fds(t), base+60)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// franz-go cannot stamp the year 9999 (it goes through UnixNano): a
	// batch built here can.
	year9999, err := batch.Append(nil, []batch.Record{{Value: []byte("x"), Timestamp: time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)}}, batch.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if code, err := produceRaw(ctx, n.cl, "storm", year9999); err != nil || code != kerr.InvalidTimestamp.Code {
		t.Errorf("storm stamped 9999-12-31: error code %d (%v), want INVALID_TIMESTAMP", code, err)
	}
	refused := []struct {
		topic string
		ts    time.Time
	}{
		{"storm", time.Now().Add(2 * time.Hour)},
		{"strict", time.UnixMilli(1)},
	}
	for _, r := range refused {
		err := n.cl.ProduceSync(ctx, &kgo.Record{Topic: r.topic, Value: []byte("x"), Timestamp: r.ts}).FirstErr()
		if !errors.Is(err, kerr.InvalidTimestamp) {
			t.Errorf("%s stamped %v: %v, want INVALID_TIMESTAMP", r.topic, r.ts, err)
		}
	}
	if err := n.cl.ProduceSync(ctx, &kgo.Record{Topic: "strict", Value: []byte("x"), Timestamp: time.Now().Add(-time.Hour)}).FirstErr(); err != nil {
		t.Errorf("strict, stamped an hour ago: %v", err)
	}
	if got := endOffset(t, n.cl, "storm"); got != producers*each {
		t.Errorf("storm's end offset %d, want %d: the refused records are not stored", got, producers*each)
	}
	if got := p.metric(t, `passbook_topic_refused_appends_total{reason="invalid_timestamp",topic="storm"}`); got != 2 {
		t.Errorf("refused invalid timestamps on storm = %v, want 2", got)
	}
}
