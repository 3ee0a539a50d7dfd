package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/batch"
	"github.com/passbook-log/passbook/offsets"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The two ends of a mirror: a source to read topics, records and
// commits from (a data directory, or Kafka brokers) and a target to
// write them to (Kafka brokers, or a data directory).

// mirrorTopic is a topic as the mirror carries it.
type mirrorTopic struct {
	name       string
	partitions int
	cfg        passbook.TopicConfig
}

// tp names a partition.
type tp struct {
	topic string
	p     int32
}

// srcChunk is records read from one source partition, in order, and how
// far they cover it: every source offset below coveredTo that holds a
// record is in recs or was read before.
type srcChunk struct {
	tp
	recs      []batch.Record
	coveredTo int64
}

type mirrorSource interface {
	String() string
	topics(ctx context.Context) ([]mirrorTopic, error)
	extents(ctx context.Context, names []string) (map[string]*topicExtent, error)
	// readAt reads up to n records of a partition from offset from,
	// for the start's reconciliation.
	readAt(ctx context.Context, at tp, from int64, n int) ([]batch.Record, error)
	// start begins reading each partition at its offset; poll returns
	// what came since (nothing: nothing new for now).
	start(ctx context.Context, from map[tp]int64) error
	poll(ctx context.Context) ([]srcChunk, error)
	commits(ctx context.Context) ([]offsets.Entry, error)
	close() error
}

type mirrorTarget interface {
	String() string
	// ensure creates the topic, or checks the one there has as many
	// partitions.
	ensure(ctx context.Context, t mirrorTopic) (created bool, err error)
	extents(ctx context.Context, names []string) (map[string]*topicExtent, error)
	read(ctx context.Context, at tp, from, to int64) ([]batch.Record, error)
	// send writes each partition's records in order, after those of
	// the sends before it; wait returns the offsets the target gave
	// them: for each partition a prefix of its records, all of them
	// unless err says why not. Sends are made from one goroutine.
	send(recs map[tp][]batch.Record) (wait func() (map[tp][]int64, error))
	commit(ctx context.Context, group string, entries []offsets.Entry) error
	close() error
}

// Chunk bounds: a poll of a data directory reads at most this much of
// each partition.
const (
	mirrorChunkRecords = 10_000
	mirrorChunkBytes   = 4 << 20
)

func recordBytes(r *batch.Record) int {
	n := len(r.Key) + len(r.Value)
	for _, h := range r.Headers {
		n += len(h.Key) + len(h.Value)
	}
	return n
}

// sameRecord reports whether two records carry the same key, value and
// headers (the timestamp a target may set itself).
func sameRecord(a, b *batch.Record) bool {
	if !bytes.Equal(a.Key, b.Key) || !bytes.Equal(a.Value, b.Value) || (a.Value == nil) != (b.Value == nil) || len(a.Headers) != len(b.Headers) {
		return false
	}
	for i := range a.Headers {
		if a.Headers[i].Key != b.Headers[i].Key || !bytes.Equal(a.Headers[i].Value, b.Headers[i].Value) {
			return false
		}
	}
	return true
}

// ---- a data directory

type dataEnd struct {
	dir string
	db  *passbook.DB
	pos map[tp]int64
}

func (d *dataEnd) String() string {
	abs, err := filepath.Abs(d.dir)
	if err != nil {
		abs = d.dir
	}
	return "data:" + abs
}

func (d *dataEnd) topics(context.Context) ([]mirrorTopic, error) {
	var out []mirrorTopic
	for _, t := range d.db.Topics() {
		out = append(out, mirrorTopic{name: t.Name(), partitions: t.Partitions(), cfg: t.Config()})
	}
	return out, nil
}

func (d *dataEnd) extents(_ context.Context, names []string) (map[string]*topicExtent, error) {
	out := map[string]*topicExtent{}
	for _, name := range names {
		t, err := d.db.Topic(name)
		if errors.Is(err, passbook.ErrUnknownTopic) {
			continue
		}
		if err != nil {
			return nil, err
		}
		info := t.Describe()
		ext := &topicExtent{name: name, partitions: len(info.Partitions)}
		for _, p := range info.Partitions {
			if p.Fenced != "" {
				return nil, fmt.Errorf("topic %s partition %d cannot be read: %s", name, p.Partition, p.Fenced)
			}
			ext.start = append(ext.start, p.StartOffset)
			ext.head = append(ext.head, p.Head)
		}
		out[name] = ext
	}
	return out, nil
}

// records reads partition at's records from offset from, up to n of
// them and about maxBytes, and says whether it reached the head.
func (d *dataEnd) records(at tp, from, to int64, n, maxBytes int) (recs []batch.Record, atHead bool, err error) {
	t, err := d.db.Topic(at.topic)
	if err != nil {
		return nil, false, err
	}
	size := 0
	for r, err := range t.Records(at.p, from) {
		if err != nil {
			return nil, false, fmt.Errorf("read %s/%d at %d: %w", at.topic, at.p, from, err)
		}
		if r.Offset >= to {
			return recs, true, nil
		}
		if len(recs) >= n || size >= maxBytes {
			return recs, false, nil
		}
		recs = append(recs, r.Clone())
		size += recordBytes(&r)
	}
	return recs, true, nil
}

func (d *dataEnd) readAt(_ context.Context, at tp, from int64, n int) ([]batch.Record, error) {
	recs, _, err := d.records(at, from, 1<<62, n, 1<<62)
	return recs, err
}

func (d *dataEnd) start(_ context.Context, from map[tp]int64) error {
	d.pos = from
	return nil
}

func (d *dataEnd) poll(context.Context) ([]srcChunk, error) {
	var out []srcChunk
	for at, pos := range d.pos {
		t, err := d.db.Topic(at.topic)
		if err != nil {
			return nil, err
		}
		l, err := t.Partition(at.p)
		if err != nil {
			return nil, err
		}
		head := l.Head()
		if pos >= head {
			continue
		}
		recs, atHead, err := d.records(at, pos, head, mirrorChunkRecords, mirrorChunkBytes)
		if err != nil {
			return nil, err
		}
		c := srcChunk{tp: at, recs: recs}
		switch {
		case atHead:
			c.coveredTo = head
		case len(recs) > 0:
			c.coveredTo = recs[len(recs)-1].Offset + 1
		}
		d.pos[at] = max(pos, c.coveredTo)
		out = append(out, c)
	}
	return out, nil
}

func (d *dataEnd) commits(ctx context.Context) ([]offsets.Entry, error) {
	return d.db.Offsets().List(ctx, offsets.Filter{})
}

func (d *dataEnd) ensure(_ context.Context, mt mirrorTopic) (bool, error) {
	t, err := d.db.Topic(mt.name)
	if err == nil {
		if t.Partitions() != mt.partitions {
			return false, fmt.Errorf("%w: topic %s is in %s with %s, the source's has %d", errMirrorMismatch, mt.name, d.dir, plural(t.Partitions(), "partition"), mt.partitions)
		}
		return false, nil
	}
	if !errors.Is(err, passbook.ErrUnknownTopic) {
		return false, err
	}
	cfg := mt.cfg
	cfg.Partitions = mt.partitions
	cfg.Durability = passbook.DefaultDurability
	if _, err := d.db.CreateTopic(mt.name, cfg); err != nil {
		return false, fmt.Errorf("create topic %s in %s: %w", mt.name, d.dir, err)
	}
	return true, nil
}

func (d *dataEnd) read(_ context.Context, at tp, from, to int64) ([]batch.Record, error) {
	recs, _, err := d.records(at, from, to, 1<<62, 1<<62)
	return recs, err
}

// send appends with Fsync, at once: the map that names the records is
// fsync'd next, and must never name records a power loss could take
// back.
func (d *dataEnd) send(recs map[tp][]batch.Record) func() (map[tp][]int64, error) {
	out, err := d.write(recs)
	return func() (map[tp][]int64, error) { return out, err }
}

func (d *dataEnd) write(recs map[tp][]batch.Record) (map[tp][]int64, error) {
	out := map[tp][]int64{}
	for at, rs := range recs {
		if len(rs) == 0 {
			continue
		}
		t, err := d.db.Topic(at.topic)
		if err != nil {
			return out, err
		}
		in := make([]passbook.Record, len(rs))
		for i, r := range rs {
			in[i] = passbook.Record{Timestamp: r.Timestamp, Key: r.Key, Value: r.Value, Headers: r.Headers}
		}
		first, err := t.AppendTo(at.p, in, passbook.Fsync)
		if err != nil {
			return out, err
		}
		offs := make([]int64, len(rs))
		for i := range offs {
			offs[i] = first + int64(i)
		}
		out[at] = offs
	}
	return out, nil
}

func (d *dataEnd) commit(ctx context.Context, group string, entries []offsets.Entry) error {
	return d.db.Offsets().CommitEntries(ctx, entries)
}

func (d *dataEnd) close() error { return d.db.Close() }

var errMirrorMismatch = errors.New("the target does not match the source")

// ---- Kafka brokers

type kafkaEnd struct {
	b    *brokerFlags
	c    *cluster    // admin
	prod *kgo.Client // the target's idempotent producer
	cons *kgo.Client // the source's consumer
	rf   int16
	// batchMax bounds the producer's batches: Kafka refuses a batch
	// larger than the topic's max.message.bytes (1 MiB by default).
	batchMax int32
	pos      map[tp]int64 // source: the next offset after what poll returned
	idle     map[tp]int   // source: polls in a row with nothing from a partition behind its head
}

func dialKafkaEnd(ctx context.Context, b *brokerFlags, rf int16) (*kafkaEnd, error) {
	c, err := b.dial(ctx)
	if err != nil {
		return nil, err
	}
	return &kafkaEnd{b: b, c: c, rf: rf}, nil
}

func (k *kafkaEnd) String() string {
	seeds, _ := k.b.seeds()
	seeds = slices.Clone(seeds)
	slices.Sort(seeds)
	return "kafka:" + strings.Join(seeds, ",")
}

func (k *kafkaEnd) topics(ctx context.Context) ([]mirrorTopic, error) {
	md, err := k.c.adm.Metadata(ctx)
	if err != nil {
		return nil, fmt.Errorf("metadata: %w", err)
	}
	var names []string
	for name, td := range md.Topics {
		if td.IsInternal || strings.HasPrefix(name, "__") || td.Err != nil {
			continue
		}
		names = append(names, name)
	}
	slices.Sort(names)
	var cfgs map[string]passbook.TopicConfig
	if len(names) > 0 {
		if cfgs, err = k.c.topicConfigs(ctx, names...); err != nil {
			return nil, err
		}
	}
	var out []mirrorTopic
	for _, name := range names {
		out = append(out, mirrorTopic{name: name, partitions: len(md.Topics[name].Partitions), cfg: cfgs[name]})
	}
	return out, nil
}

func (k *kafkaEnd) extents(ctx context.Context, names []string) (map[string]*topicExtent, error) {
	return k.c.extents(ctx, names...)
}

// readRange reads partition at from offset from until offset to (or n
// records): the records a target holds past the map, or a source's from
// where the map stops.
func (k *kafkaEnd) readRange(ctx context.Context, at tp, from, to int64, n int) ([]batch.Record, error) {
	if from >= to || n <= 0 {
		return nil, nil
	}
	c, err := k.b.dial(ctx, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{at.topic: {at.p: kgo.NewOffset().At(from)}}),
		kgo.FetchMaxWait(500*time.Millisecond))
	if err != nil {
		return nil, err
	}
	defer c.Close()
	var out []batch.Record
	for idle := 0; len(out) < n && (len(out) == 0 || out[len(out)-1].Offset < to-1); {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		fs := c.cl.PollRecords(pctx, n-len(out))
		cancel()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if err := fetchErr(fs); err != nil {
			return nil, err
		}
		recs := fs.Records()
		if len(recs) == 0 {
			if idle++; idle >= 10 {
				if ahead, err := k.dataAhead(ctx, at, from, to); err != nil || !ahead {
					return out, err
				}
				idle = 0
			}
			continue
		}
		idle = 0
		for _, r := range recs {
			if r.Offset >= to || len(out) >= n {
				return out, nil
			}
			out = append(out, fromKgo(r))
			from = r.Offset + 1
		}
	}
	return out, nil
}

// fetchErr is the first error of a poll other than its context's end.
func fetchErr(fs kgo.Fetches) error {
	var err error
	fs.EachError(func(t string, p int32, ferr error) {
		if err == nil && !errors.Is(ferr, context.DeadlineExceeded) && !errors.Is(ferr, context.Canceled) {
			err = fmt.Errorf("fetch %s/%d: %w", t, p, ferr)
		}
	})
	return err
}

func fromKgo(r *kgo.Record) batch.Record {
	out := batch.Record{Offset: r.Offset, Timestamp: r.Timestamp, Key: r.Key, Value: r.Value}
	for _, h := range r.Headers {
		out.Headers = append(out.Headers, batch.RecordHeader{Key: h.Key, Value: h.Value})
	}
	return out
}

// dataAhead reports whether partition at holds a data record (not a
// transaction marker) at an offset in [from, to): asked of the leader
// with a raw Fetch, reading only the batches' headers. A partition whose
// last offsets are control records has none, and the mirror covers them.
func (k *kafkaEnd) dataAhead(ctx context.Context, at tp, from, to int64) (bool, error) {
	md, err := k.c.adm.Metadata(ctx, at.topic)
	if err != nil {
		return false, fmt.Errorf("metadata: %w", err)
	}
	pd, ok := md.Topics[at.topic].Partitions[at.p]
	if !ok || pd.Err != nil {
		return false, fmt.Errorf("metadata of %s/%d: %v", at.topic, at.p, pd.Err)
	}
	for from < to {
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.MaxWaitMillis, req.MaxBytes = -1, 0, 1<<20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = at.topic, md.Topics[at.topic].ID // v13+ names the topic by ID
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LogStartOffset = at.p, from, 1<<20, -1, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, k.c.cl.Broker(int(pd.Leader)))
		if err != nil {
			return false, fmt.Errorf("fetch %s/%d: %w", at.topic, at.p, err)
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			return false, fmt.Errorf("fetch %s/%d: an answer without the partition", at.topic, at.p)
		}
		rp2 := resp.Topics[0].Partitions[0]
		if err := kerr.ErrorForCode(rp2.ErrorCode); err != nil {
			return false, fmt.Errorf("fetch %s/%d: %w", at.topic, at.p, err)
		}
		b := rp2.RecordBatches
		moved := false
		for len(b) >= 12 {
			total := 12 + int(int32(uint32(b[8])<<24|uint32(b[9])<<16|uint32(b[10])<<8|uint32(b[11])))
			if total > len(b) || total < 61 {
				break
			}
			var rb kmsg.RecordBatch
			if err := rb.ReadFrom(b[:total]); err != nil {
				return false, fmt.Errorf("fetch %s/%d: %w", at.topic, at.p, err)
			}
			last := rb.FirstOffset + int64(rb.LastOffsetDelta)
			if rb.Attributes&0x20 == 0 && last >= from && rb.NumRecords > 0 {
				return true, nil
			}
			if last+1 > from {
				from, moved = last+1, true
			}
			b = b[total:]
		}
		if !moved {
			return false, nil
		}
	}
	return false, nil
}

func (k *kafkaEnd) readAt(ctx context.Context, at tp, from int64, n int) ([]batch.Record, error) {
	exts, err := k.c.extents(ctx, at.topic)
	if err != nil {
		return nil, err
	}
	ext, ok := exts[at.topic]
	if !ok || int(at.p) >= ext.partitions {
		return nil, fmt.Errorf("source: %w", unknownTopic(at.topic))
	}
	return k.readRange(ctx, at, from, ext.head[at.p], n)
}

func (k *kafkaEnd) start(ctx context.Context, from map[tp]int64) error {
	k.pos, k.idle = map[tp]int64{}, map[tp]int{}
	parts := map[string]map[int32]kgo.Offset{}
	for at, off := range from {
		if parts[at.topic] == nil {
			parts[at.topic] = map[int32]kgo.Offset{}
		}
		parts[at.topic][at.p] = kgo.NewOffset().At(off)
		k.pos[at] = off
	}
	c, err := k.b.dial(ctx, kgo.ConsumePartitions(parts), kgo.FetchMaxWait(500*time.Millisecond),
		kgo.FetchMaxPartitionBytes(8<<20), kgo.FetchMaxBytes(64<<20))
	if err != nil {
		return err
	}
	k.cons = c.cl
	return nil
}

// poll returns the records fetched since the last poll, waiting up to
// a second for some. A partition that stays behind its head with
// nothing fetched is checked for a tail of transaction markers only,
// which poll then covers.
func (k *kafkaEnd) poll(ctx context.Context) ([]srcChunk, error) {
	pctx, cancel := context.WithTimeout(ctx, time.Second)
	fs := k.cons.PollRecords(pctx, 50_000)
	cancel()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if err := fetchErr(fs); err != nil {
		return nil, err
	}
	got := map[tp]*srcChunk{}
	var order []tp
	fs.EachRecord(func(r *kgo.Record) {
		at := tp{r.Topic, r.Partition}
		c := got[at]
		if c == nil {
			c = &srcChunk{tp: at}
			got[at] = c
			order = append(order, at)
		}
		c.recs = append(c.recs, fromKgo(r))
		c.coveredTo = r.Offset + 1
		k.pos[at] = r.Offset + 1
	})
	var out []srcChunk
	for _, at := range order {
		k.idle[at] = 0
		out = append(out, *got[at])
	}
	if len(out) > 0 {
		return out, nil
	}
	// Nothing at all: look at the partitions still behind their heads.
	var names []string
	for at := range k.pos {
		if !slices.Contains(names, at.topic) {
			names = append(names, at.topic)
		}
	}
	exts, err := k.c.extents(ctx, names...)
	if err != nil {
		return nil, err
	}
	for at, pos := range k.pos {
		ext := exts[at.topic]
		if ext == nil || int(at.p) >= ext.partitions || pos >= ext.head[at.p] {
			continue
		}
		if k.idle[at]++; k.idle[at] < 3 {
			continue
		}
		k.idle[at] = 0
		ahead, err := k.dataAhead(ctx, at, pos, ext.head[at.p])
		if err != nil {
			return nil, err
		}
		if !ahead {
			k.pos[at] = ext.head[at.p]
			out = append(out, srcChunk{tp: at, coveredTo: ext.head[at.p]})
		}
	}
	return out, nil
}

func (k *kafkaEnd) commits(ctx context.Context) ([]offsets.Entry, error) {
	return k.c.committed(ctx, "", "")
}

func (k *kafkaEnd) ensure(ctx context.Context, mt mirrorTopic) (bool, error) {
	exts, err := k.c.extents(ctx, mt.name)
	if err != nil {
		return false, err
	}
	if ext, ok := exts[mt.name]; ok {
		if ext.partitions != mt.partitions {
			return false, fmt.Errorf("%w: topic %s is on %s with %s, the source's has %d", errMirrorMismatch, mt.name, k.b.brokers, plural(ext.partitions, "partition"), mt.partitions)
		}
		return false, nil
	}
	resp, err := k.c.adm.CreateTopic(ctx, int32(mt.partitions), k.rf, kafkaTopicConfigs(mt.cfg), mt.name)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		msg := resp.ErrMessage
		if msg != "" {
			msg = " (" + msg + ")"
		}
		return false, fmt.Errorf("create topic %s on %s: %w%s", mt.name, k.b.brokers, err, msg)
	}
	// The metadata of a topic just made reaches every broker a moment
	// later: wait until it is seen with all its partitions.
	for {
		exts, err := k.c.extents(ctx, mt.name)
		if err != nil {
			return false, err
		}
		if ext, ok := exts[mt.name]; ok && ext.partitions == mt.partitions {
			return true, nil
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// kafkaTopicConfigs is a topic's settings in Kafka's names: what the
// cluster would otherwise take from its own defaults. passbook keeps a
// topic forever unless told; Kafka's default is 7 days, so no retention
// is retention.ms=-1.
func kafkaTopicConfigs(c passbook.TopicConfig) map[string]*string {
	out := map[string]*string{}
	put := func(k string, v int64) {
		s := strconv.FormatInt(v, 10)
		out[k] = &s
	}
	policy := c.CleanupPolicy
	if policy == "" {
		policy = passbook.CleanupDelete
	}
	out["cleanup.policy"] = &policy
	if c.RetentionAge > 0 {
		put("retention.ms", c.RetentionAge.Milliseconds())
	} else {
		put("retention.ms", -1)
	}
	if c.RetentionBytes > 0 {
		put("retention.bytes", c.RetentionBytes)
	}
	if c.MaxRecordBytes > 0 {
		put("max.message.bytes", int64(c.MaxRecordBytes))
	}
	if c.DeleteRetention > 0 {
		put("delete.retention.ms", c.DeleteRetention.Milliseconds())
	}
	return out
}

func (k *kafkaEnd) read(ctx context.Context, at tp, from, to int64) ([]batch.Record, error) {
	return k.readRange(ctx, at, from, to, int(to-from))
}

// send produces with an idempotent producer (acks=all): a partition's
// records land in order, once each, however the client retries. It is
// not cancelled with the command: what was sent is waited for (within
// produceTimeout), so that a Ctrl-C leaves a map that says where it is.
// The bound is the context's, not kgo.RecordDeliveryTimeout: kgo counts
// that from each record's timestamp, and a mirrored record keeps its
// source's, so a retry of any record older than the bound would fail.
func (k *kafkaEnd) send(recs map[tp][]batch.Record) func() (map[tp][]int64, error) {
	if k.prod == nil {
		c, err := k.b.dial(context.Background(), kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.ProducerBatchMaxBytes(max(1_000_000, k.batchMax)), kgo.MaxBufferedRecords(1_000_000), kgo.MaxBufferedBytes(512<<20),
			kgo.ProducerLinger(0))
		if err != nil {
			return func() (map[tp][]int64, error) { return nil, err }
		}
		k.prod = c.cl
	}
	type result struct {
		at  tp
		off int64
		err error
	}
	n := 0
	for _, in := range recs {
		n += len(in)
	}
	results := make([]result, n)
	var wg sync.WaitGroup
	wg.Add(n)
	ctx, cancel := context.WithTimeout(context.Background(), produceTimeout+5*time.Second)
	i := 0
	for at, in := range recs {
		for j := range in {
			r := &kgo.Record{Topic: at.topic, Partition: at.p, Key: in[j].Key, Value: in[j].Value, Timestamp: in[j].Timestamp}
			for _, h := range in[j].Headers {
				r.Headers = append(r.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
			}
			res := &results[i]
			res.at = at
			i++
			k.prod.Produce(ctx, r, func(r *kgo.Record, err error) {
				res.off, res.err = r.Offset, err
				wg.Done()
			})
		}
	}
	return func() (map[tp][]int64, error) {
		wg.Wait()
		cancel()
		out := map[tp][]int64{}
		failed := map[tp]bool{}
		var first error
		for _, res := range results {
			if failed[res.at] {
				continue
			}
			if res.err != nil {
				failed[res.at] = true
				if first == nil {
					first = fmt.Errorf("produce to %s/%d: %w", res.at.topic, res.at.p, res.err)
				}
				continue
			}
			out[res.at] = append(out[res.at], res.off)
		}
		return out, first
	}
}

func (k *kafkaEnd) commit(ctx context.Context, group string, entries []offsets.Entry) error {
	byTopic := map[string]map[int32]int64{}
	for _, e := range entries {
		if byTopic[e.Topic] == nil {
			byTopic[e.Topic] = map[int32]int64{}
		}
		byTopic[e.Topic][e.Partition] = e.Offset
	}
	for topic, offs := range byTopic {
		if err := k.c.commit(ctx, group, topic, offs); err != nil {
			return err
		}
	}
	return nil
}

func (k *kafkaEnd) close() error {
	if k.prod != nil {
		k.prod.Close()
	}
	if k.cons != nil {
		k.cons.Close()
	}
	k.c.Close()
	return nil
}
