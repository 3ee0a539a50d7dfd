package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/passbook-log/passbook/batch"
	"github.com/passbook-log/passbook/consumer"
	"github.com/passbook-log/passbook/storage"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// consumeOpts are consume's settings, checked.
type consumeOpts struct {
	name, format   string
	start          consumer.Start
	mode           consumer.Commit
	everyN         int64
	everyD         time.Duration
	gap            consumer.Gap
	max            int64
	follow         bool
	partitions     []int32
	sessionTimeout time.Duration
	isolation      storage.Isolation
}

// readable is where each partition of ext ends for a reader of isolation
// iso: read committed, its last stable offset (ListOffsets with
// isolation_level 1, which Kafka answers with the LSO), else the high
// watermark. Records at or past it are of transactions still open.
func (c *cluster) readable(ctx context.Context, ext *topicExtent, iso storage.Isolation) ([]int64, error) {
	if iso == storage.ReadUncommitted {
		return ext.head, nil
	}
	listed, err := c.adm.ListCommittedOffsets(ctx, ext.name)
	if err == nil {
		err = listed.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("list the last stable offsets of %s: %w", ext.name, err)
	}
	ends := slices.Clone(ext.head)
	listed.Each(func(o kadm.ListedOffset) {
		if o.Topic == ext.name && o.Partition >= 0 && int(o.Partition) < len(ends) {
			ends[o.Partition] = min(o.Offset, ext.head[o.Partition])
		}
	})
	return ends, nil
}

// positions finds where the consumer starts on each of parts (all when
// nil): its committed offset, or --from where it has none; and applies
// --on-gap — as consumer.New does on a data directory, with the same
// errors, before anything is read or committed. Latest is where the
// partition ends for the consumer's isolation (ends, from readable).
func (c *cluster) positions(ctx context.Context, ext *topicExtent, ends []int64, o *consumeOpts, parts []int32) (map[int32]int64, error) {
	entries, err := c.committed(ctx, o.name, ext.name)
	if err != nil {
		return nil, err
	}
	committed := map[int32]int64{}
	for _, en := range entries {
		committed[en.Partition] = en.Offset
	}
	var uncommitted []int32 // --from applies only to these
	for _, p := range ext.partsOf(parts) {
		if _, ok := committed[p]; !ok {
			uncommitted = append(uncommitted, p)
		}
	}
	from := map[int32]int64{}
	if len(uncommitted) > 0 {
		if from, err = c.targets(ctx, ext, o.start, uncommitted); err != nil {
			return nil, err
		}
		if kind, _, _ := startParts(o.start); kind == "latest" {
			for _, p := range uncommitted {
				from[p] = ends[p]
			}
		}
	}
	out := map[int32]int64{}
	for _, p := range ext.partsOf(parts) {
		next, ok := committed[p]
		if !ok {
			out[p] = from[p]
			continue
		}
		start, head := ext.start[p], ext.head[p]
		switch {
		case next > head:
			return nil, fmt.Errorf("consumer %s on %s/%d: committed offset %d is past the head %d: %w",
				o.name, ext.name, p, next, head, &storage.OutOfRangeError{Offset: next, Start: start, Head: head})
		case next >= start:
			out[p] = next
		case o.gap == consumer.GapResetEarliest:
			out[p] = start
		case o.gap == consumer.GapResetLatest:
			out[p] = ends[p]
		default:
			return nil, &consumer.GapError{Consumer: o.name, Topic: ext.name, Partition: p, Committed: next, Start: start}
		}
	}
	return out, nil
}

// partsOf is asked, or every partition of ext when nil.
func (ext *topicExtent) partsOf(asked []int32) []int32 {
	if asked != nil {
		return asked
	}
	all := make([]int32, ext.partitions)
	for p := range all {
		all[p] = int32(p)
	}
	return all
}

// kafkaConsumer reads a topic over the Kafka protocol as consumer group
// o.name — a member of the group, its partitions assigned by the group
// — or, with --partition, reads the partitions named and commits to the
// group without joining it (Kafka takes such commits only while the
// group has no members). Positions move only once out has the record's
// line, and Commit commits them: what out has written.
type kafkaConsumer struct {
	cl     *kgo.Client // the consumer's
	c      *cluster    // an admin client of its own
	ext    *topicExtent
	o      *consumeOpts
	direct bool

	ready     chan struct{} // closed once the first assignment's positions are set
	readyOnce sync.Once

	// With --follow a failure to reach the brokers is retried (retry):
	// stop ends the retries (the command's context), stderr hears of them.
	stop   <-chan struct{}
	stderr io.Writer

	mu        sync.Mutex
	pos       map[int32]int64 // the next offset to read, of each partition held
	committed map[int32]int64
	// unsaved: positions of partitions lost with a commit still owed
	// (the generation it was for ended first), to commit when the
	// partition comes back to this consumer (see adjust).
	unsaved map[int32]int64
	heads   map[int32]int64 // without --follow: where each partition stops
	fatal   error           // from an assignment
	cancel  context.CancelFunc
}

// hold takes partitions' positions (an assignment, or --partition) and
// where they stop without --follow (the heads when first held).
func (k *kafkaConsumer) hold(pos map[int32]int64, head []int64) {
	k.mu.Lock()
	for p, at := range pos {
		k.pos[p] = at
		k.committed[p] = at // as on a data directory: only a partition read from is committed
		if _, ok := k.heads[p]; !ok {
			k.heads[p] = head[p]
		}
	}
	k.mu.Unlock()
	k.readyOnce.Do(func() { close(k.ready) })
}

// drop forgets revoked or lost partitions: what was written of them and
// not committed is delivered again to their next owner (at least once).
func (k *kafkaConsumer) drop(_ context.Context, _ *kgo.Client, lost map[string][]int32) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, p := range lost[k.ext.name] {
		if at, ok := k.pos[p]; ok && at != k.committed[p] {
			k.unsaved[p] = at
		}
		delete(k.pos, p)
		delete(k.committed, p)
	}
}

// adjust sets the assigned partitions' positions as a data directory
// consumer finds them (committed, --from, --on-gap), not kgo's reset.
func (k *kafkaConsumer) adjust(ctx context.Context, assigned map[string]map[int32]kgo.Offset) (map[string]map[int32]kgo.Offset, error) {
	var parts []int32
	for p := range assigned[k.ext.name] {
		parts = append(parts, p)
	}
	if len(parts) == 0 {
		k.hold(nil, nil)
		return assigned, nil
	}
	ext, err := k.c.extent(ctx, k.ext.name)
	if err == nil && ext.partitions != k.ext.partitions {
		err = fmt.Errorf("topic %s now has %d partitions, not %d", ext.name, ext.partitions, k.ext.partitions)
	}
	var pos map[int32]int64
	var ends []int64
	if err == nil {
		ends, err = k.c.readable(ctx, ext, k.o.isolation)
	}
	if err == nil {
		pos, err = k.c.positions(ctx, ext, ends, k.o, parts)
	}
	if err != nil {
		k.mu.Lock()
		if k.fatal == nil {
			k.fatal = err
		}
		k.mu.Unlock()
		k.cancel()
		return nil, err
	}
	k.hold(pos, ends)
	// A partition back with this consumer after it was lost with a
	// commit owed resumes where out is, not at the group's offset: those
	// records are written already (and the next Commit commits them), as
	// long as nobody committed past them meanwhile.
	k.mu.Lock()
	for p := range pos {
		if at, ok := k.unsaved[p]; ok {
			if at > pos[p] {
				pos[p], k.pos[p] = at, at
			}
			delete(k.unsaved, p)
		}
	}
	k.mu.Unlock()
	out := map[int32]kgo.Offset{}
	for p, at := range pos {
		out[p] = kgo.NewOffset().At(at).WithEpoch(-1)
	}
	return map[string]map[int32]kgo.Offset{k.ext.name: out}, nil
}

// advance moves partition p's position past a record out has taken.
func (k *kafkaConsumer) advance(p int32, next int64) {
	k.mu.Lock()
	if _, ok := k.pos[p]; ok {
		k.pos[p] = next
	}
	k.mu.Unlock()
}

// done reports whether every partition held has reached where it stops
// (without --follow).
func (k *kafkaConsumer) done() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	for p, at := range k.pos {
		if at < k.heads[p] {
			return false
		}
	}
	return true
}

// atHead reports whether every partition held is at the high watermark
// the brokers last told (hwm), or at where it started when none was told.
func (k *kafkaConsumer) atHead(hwm map[int32]int64) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	for p, at := range k.pos {
		h, ok := hwm[p]
		if !ok {
			h = k.heads[p]
		}
		if at < h {
			return false
		}
	}
	return true
}

// Commit commits each held partition's position that moved: exactly
// what out has written (out calls it after a write; positions move only
// when out has taken a record).
func (k *kafkaConsumer) Commit(ctx context.Context) error {
	if !k.o.follow {
		return k.commit(ctx)
	}
	// --follow outlasts the brokers going away: what was written stays
	// to be committed, and the commit is tried again until it goes
	// through or the command is stopped.
	var r retrier
	for {
		err := k.commit(ctx)
		if err == nil {
			return nil
		}
		if lostGeneration(err) && !k.direct {
			// The generation the commit was for is over (the brokers
			// restarted, or the group rebalanced): committing it again
			// can never succeed until the group is rejoined, which
			// BlockRebalanceOnPoll holds back until allowed.
			k.cl.AllowRebalance()
		}
		if werr := r.wait(k.stop, k.stderr, err); werr != nil {
			return err
		}
	}
}

// lostGeneration reports whether a commit failed because the member's
// generation is over: only a rejoin lets it commit again.
func lostGeneration(err error) bool {
	for _, e := range []error{kerr.IllegalGeneration, kerr.UnknownMemberID, kerr.RebalanceInProgress, kerr.FencedInstanceID, kerr.StaleMemberEpoch} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// retrier waits between tries with a backoff (250 ms doubling to 10 s)
// and says on stderr what failed and when it tries again.
type retrier struct{ delay time.Duration }

// retryMax is the longest wait between two tries.
const retryMax = 10 * time.Second

// wait says why and waits; it returns an error once stop is closed.
func (r *retrier) wait(stop <-chan struct{}, stderr io.Writer, why error) error {
	r.delay = min(max(2*r.delay, 250*time.Millisecond), retryMax)
	fmt.Fprintf(stderr, "consume: %v; trying again in %s (Ctrl-C to stop)\n", why, r.delay)
	select {
	case <-stop:
		return context.Canceled
	case <-time.After(r.delay):
		return nil
	}
}

func (k *kafkaConsumer) commit(ctx context.Context) error {
	k.mu.Lock()
	offs := map[int32]int64{}
	for p, at := range k.pos {
		if c, ok := k.committed[p]; !ok || c != at {
			offs[p] = at
		}
	}
	k.mu.Unlock()
	if len(offs) == 0 {
		return nil
	}
	var err error
	if k.direct {
		err = k.c.commit(ctx, k.o.name, k.ext.name, offs)
	} else {
		eo := map[int32]kgo.EpochOffset{}
		for p, at := range offs {
			eo[p] = kgo.EpochOffset{Epoch: -1, Offset: at}
		}
		k.cl.CommitOffsetsSync(ctx, map[string]map[int32]kgo.EpochOffset{k.ext.name: eo},
			func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, cerr error) {
				if cerr != nil {
					err = cerr
					return
				}
				for _, t := range resp.Topics {
					for _, p := range t.Partitions {
						if e := kerr.ErrorForCode(p.ErrorCode); e != nil && err == nil {
							err = fmt.Errorf("partition %d: %w", p.Partition, e)
						}
					}
				}
			})
		if err != nil {
			err = fmt.Errorf("commit offsets of %s on %s: %w", k.o.name, k.ext.name, err)
		}
	}
	if err != nil {
		return err
	}
	k.mu.Lock()
	for p, at := range offs {
		if _, ok := k.pos[p]; ok {
			k.committed[p] = at
		}
	}
	k.mu.Unlock()
	return nil
}

// remoteConsume is consume over the Kafka protocol: the same output,
// commit modes and summary as on a data directory.
func remoteConsume(ctx context.Context, e *env, b *brokerFlags, topic string, o *consumeOpts) error {
	c, err := b.dial(ctx)
	if err != nil {
		return err
	}
	ext, err := c.extent(ctx, topic)
	if err == nil {
		err = checkPartitions(ext, o.partitions)
	}
	var pos map[int32]int64
	var ends []int64
	if err == nil {
		ends, err = c.readable(ctx, ext, o.isolation)
	}
	if err == nil {
		pos, err = c.positions(ctx, ext, ends, o, o.partitions)
	}
	if err == nil && o.partitions != nil && o.mode != consumer.CommitNone {
		// Not a member, it could not commit into a group that has some.
		err = c.refuseLive(ctx, o.name, "consume --partition")
	}
	if err != nil {
		c.Close()
		return asUsage(err, "--from")
	}
	// c stays open for the group's assignments and --partition's commits;
	// the consumer has a client of its own.
	defer c.Close()
	k := &kafkaConsumer{c: c, ext: ext, o: o, direct: o.partitions != nil, ready: make(chan struct{}), stop: ctx.Done(), stderr: e.stderr,
		pos: map[int32]int64{}, committed: map[int32]int64{}, unsaved: map[int32]int64{}, heads: map[int32]int64{}}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	k.cancel = cancel
	// Control records (transaction markers) come back too, so that a
	// position moves past a marker as the data directory's reader moves
	// past it; they are not written out.
	opts := []kgo.Opt{kgo.FetchMaxWait(time.Second), kgo.KeepControlRecords(), kgo.FetchIsolationLevel(kgoIsolation(o.isolation))}
	if k.direct {
		at := map[int32]kgo.Offset{}
		for p, next := range pos {
			at[p] = kgo.NewOffset().At(next).WithEpoch(-1)
		}
		opts = append(opts, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: at}))
	} else {
		opts = append(opts, kgo.ConsumerGroup(o.name), kgo.ConsumeTopics(topic),
			kgo.DisableAutoCommit(), kgo.BlockRebalanceOnPoll(),
			kgo.SessionTimeout(o.sessionTimeout), kgo.HeartbeatInterval(max(o.sessionTimeout/5, 100*time.Millisecond)),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.AdjustFetchOffsetsFn(k.adjust),
			kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, assigned map[string][]int32) {
				if len(assigned[topic]) == 0 {
					k.hold(nil, nil) // the group's other members have every partition: nothing to read
				}
			}),
			kgo.OnPartitionsRevoked(k.drop), kgo.OnPartitionsLost(k.drop))
	}
	consuming, err := b.dial(ctx, opts...)
	if err != nil {
		return err
	}
	k.cl = consuming.cl
	defer k.cl.CloseAllowingRebalance()
	if k.direct {
		k.hold(pos, ends)
	}

	total := int64(0)
	for p, next := range pos {
		total += max(0, ends[p]-next)
	}
	if o.max > 0 {
		total = min(total, o.max)
	}
	bar := newProgress(e.stdout, e.stderr, "consume", total, unitRecords)
	out := &output{w: e.stdout, c: k, mode: o.mode, everyN: o.everyN, everyD: o.everyD, bar: bar,
		buf: make([]byte, 0, outputBuffer), lastCommit: time.Now()}
	began := time.Now()
	err = k.run(runCtx, out)
	if ferr := out.flush(ctx, true); err == nil {
		err = ferr
	}
	k.mu.Lock()
	if k.fatal != nil {
		err = k.fatal
	}
	k.mu.Unlock()
	if err != nil && ctx.Err() != nil {
		err = ctx.Err() // Ctrl-C or SIGTERM, whatever the client said
	}
	bar.finish(err)
	return consumeSummary(e, out, topic, o.name, began, asUsage(err, "--from"))
}

// kgoIsolation is franz-go's isolation level for iso.
func kgoIsolation(iso storage.Isolation) kgo.IsolationLevel {
	if iso == storage.ReadUncommitted {
		return kgo.ReadUncommitted()
	}
	return kgo.ReadCommitted()
}

// run reads until the heads (without --follow), --max records, or ctx.
func (k *kafkaConsumer) run(ctx context.Context, out *output) error {
	select {
	case <-k.ready:
	case <-ctx.Done():
		return ctx.Err()
	}
	hwm := map[int32]int64{}
	read := int64(0)
	var retry retrier
	for {
		if (!k.o.follow && k.done()) || (k.o.max > 0 && read >= k.o.max) {
			return nil
		}
		fetches := k.cl.PollRecords(ctx, 10_000)
		if ctx.Err() != nil || fetches.IsClientClosed() {
			k.cl.AllowRebalance()
			return ctx.Err()
		}
		var err, fetchErr error
		fetches.EachError(func(t string, p int32, ferr error) {
			switch {
			case fetchErr != nil || errors.Is(ferr, context.Canceled):
			case t == "": // the client's own, such as the group's session
				fetchErr = fmt.Errorf("consumer group %s: %w", k.o.name, ferr)
			default:
				fetchErr = fmt.Errorf("fetch %s/%d: %w", t, p, ferr)
			}
		})
		if fetchErr != nil && !k.o.follow {
			err = fetchErr
		}
		stop := false
		fetches.EachPartition(func(fp kgo.FetchTopicPartition) {
			if err != nil || stop {
				return
			}
			for _, r := range fp.Records {
				if r.Attrs.IsControl() {
					k.advance(r.Partition, r.Offset+1) // a marker: nothing to write
					continue
				}
				m := consumer.Message{Partition: r.Partition, Record: batch.Record{
					Offset: r.Offset, Timestamp: r.Timestamp, Key: r.Key, Value: r.Value}}
				for _, h := range r.Headers {
					m.Headers = append(m.Headers, batch.RecordHeader{Key: h.Key, Value: h.Value})
				}
				if err = out.add(ctx, k.o.format, m); err != nil {
					return
				}
				k.advance(r.Partition, r.Offset+1)
				read++
				if k.o.max > 0 && read >= k.o.max {
					stop = true
					return
				}
			}
			end := fp.HighWatermark
			if k.o.isolation == storage.ReadCommitted && fp.LastStableOffset >= 0 {
				end = fp.LastStableOffset // where a read_committed fetch stops
			}
			if end > hwm[fp.Partition] {
				hwm[fp.Partition] = end
			}
		})
		if err == nil && !stop && (k.cl.BufferedFetchRecords() == 0 || k.atHead(hwm)) {
			// Nothing more to hand out now: write out what is held and
			// commit it, before waiting.
			err = out.flush(ctx, true)
		}
		k.cl.AllowRebalance()
		if err != nil {
			return err
		}
		if fetchErr != nil {
			// --follow: the client reconnects by itself, and a group's
			// member joins again; what it had fetched was handed out.
			if werr := retry.wait(ctx.Done(), k.stderr, fetchErr); werr != nil {
				return ctx.Err()
			}
			continue
		}
		retry = retrier{}
	}
}

// checkPartitions refuses a --partition the topic does not have, or one
// named twice, as consumer.New does.
func checkPartitions(ext *topicExtent, parts []int32) error {
	seen := map[int32]bool{}
	for _, p := range parts {
		if p < 0 || int(p) >= ext.partitions || seen[p] {
			return &consumer.PartitionError{Topic: ext.name, Partition: p, Partitions: ext.partitions, Duplicate: seen[p]}
		}
		seen[p] = true
	}
	return nil
}
