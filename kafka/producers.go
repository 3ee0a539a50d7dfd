package kafka

// Idempotent produce: the producer state of each partition.
//
// A producer that got an id from InitProducerID numbers its records per
// partition (a batch carries producerId, producerEpoch and baseSequence;
// its records are baseSequence, baseSequence+1, …). For each (producer
// id, partition) the server keeps the producer's epoch and its last five
// batches: their first and last sequence numbers and offsets. A batch is
//
//   - a duplicate when it has the epoch and the sequence range of one of
//     them: it is not written again, and the producer is told the offset
//     the original got (and no error, as Kafka answers from 1.0 on; it
//     never sends DUPLICATE_SEQUENCE_NUMBER);
//   - refused with INVALID_PRODUCER_EPOCH when its epoch is older than the
//     producer's;
//   - refused with OUT_OF_ORDER_SEQUENCE_NUMBER when it does not follow
//     the last batch (sequence last+1, wrapping after 2^31−1), or, with a
//     newer epoch, does not start at 0;
//   - accepted with any sequence from a producer the partition does not
//     know (as Kafka does once a producer's state expired).
//
// The check, the append and the bookkeeping happen under the partition's
// producer lock, so a retry on a new connection cannot race its
// original. A batch is CRC-checked before it is compared, so a damaged
// one is never taken for a duplicate.
//
// # Restarts
//
// Nothing is persisted besides the log itself: batch headers carry the
// producer id, epoch and base sequence. At its first idempotent produce
// after the server starts, a partition's state is rebuilt by reading the
// headers of the batches in the last Options.ProducerStateBytes of its
// log (estimated from its average record size): startup costs nothing,
// and the first idempotent produce to each partition reads up to that
// much (16 MiB by default, a few milliseconds from the page cache). A
// retry whose original is further back than that — more than 16 MiB of
// other appends to the partition between a batch and its retry — is not
// recognized and is written again. Kafka snapshots producer state at
// each segment roll instead; passbook's storage engine knows nothing of
// producers, and this keeps it so.
//
// A producer's state is forgotten after producerExpiry without appends
// to the partition (Kafka's producer.id.expiration.ms, one day).

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/passbook-log/passbook/batch"
	"github.com/passbook-log/passbook/storage"
)

const (
	defaultProducerStateBytes = 16 << 20
	producerBatches           = 5 // remembered per producer and partition, as Kafka
	producerExpiry            = 24 * time.Hour
	producerSweepEvery        = time.Minute
)

var (
	errOutOfOrderSequence = errors.New("kafka: out of order sequence number")
	errProducerEpoch      = errors.New("kafka: producer epoch is older than the producer's")
	// errTxnState refuses a transactional batch outside its producer's
	// ongoing transaction (INVALID_TXN_STATE).
	errTxnState = errors.New("kafka: not in an ongoing transaction")
)

// producerStates holds the producer state of every partition written by
// an idempotent producer since the server started.
type producerStates struct {
	scanBytes int64
	log       *slog.Logger

	mu    sync.Mutex
	parts map[partitionKey]*partitionProducers
}

type partitionKey struct {
	topic     string
	partition int32
}

func newProducerStates(scanBytes int64, log *slog.Logger) *producerStates {
	return &producerStates{scanBytes: scanBytes, log: log, parts: map[partitionKey]*partitionProducers{}}
}

// partitionProducers is one partition's producers. mu serializes the
// idempotent appends to the partition.
type partitionProducers struct {
	mu        sync.Mutex
	log       *storage.Log // what the state was built from; a re-created topic has another
	producers map[int64]*producerState
	lastSweep time.Time
}

// producerState is one producer's epoch and last batches on a partition.
type producerState struct {
	epoch   int16
	batches []producedBatch // oldest first, at most producerBatches
	last    time.Time       // of its last append
	lastMs  int64           // the max timestamp of its last batch
}

type producedBatch struct {
	firstSeq, lastSeq       int32
	firstOffset, lastOffset int64
}

// lastSequence is the sequence number of a batch's last record.
func lastSequence(h batch.Header) int32 {
	if int64(h.BaseSequence)+int64(h.LastOffsetDelta) > math.MaxInt32 {
		return int32(int64(h.BaseSequence) + int64(h.LastOffsetDelta) - math.MaxInt32 - 1)
	}
	return h.BaseSequence + h.LastOffsetDelta
}

// follows reports whether seq comes right after last.
func follows(last, seq int32) bool {
	return int64(seq) == int64(last)+1 || seq == 0 && last == math.MaxInt32
}

// append appends a batch of an idempotent producer, whose header is h,
// to partition part of topic, unless it is a duplicate of one of the
// producer's last batches: then it returns the original's offsets.
func (ps *producerStates) append(topic string, part int32, l *storage.Log, b []byte, h batch.Header) (span, error) {
	// A corrupt batch is refused as corrupt, never answered as a
	// duplicate or a sequence error (Kafka validates before it looks at
	// the producer's state). A batch that is appended is checked by
	// AppendBatch; the answers that do not append check it here, so the
	// usual path pays for one CRC, not two.
	answer := func(sp span, err error) (span, error) {
		if _, cerr := batch.Check(b); cerr != nil {
			return span{}, fmt.Errorf("%w: %w", storage.ErrInvalidBatch, cerr)
		}
		return sp, err
	}
	pp := ps.partition(topic, part, l)
	pp.mu.Lock()
	defer pp.mu.Unlock()
	if pp.log != l {
		pp.log, pp.producers = l, map[int64]*producerState{}
		ps.load(pp, topic, part)
	}
	st := pp.producers[h.ProducerID]
	last := lastSequence(h)
	if st != nil {
		switch {
		case h.ProducerEpoch < st.epoch:
			return answer(span{}, fmt.Errorf("%w: batch epoch %d, producer %d is at %d", errProducerEpoch, h.ProducerEpoch, h.ProducerID, st.epoch))
		case h.ProducerEpoch == st.epoch:
			for _, pb := range st.batches {
				if pb.firstSeq == h.BaseSequence && pb.lastSeq == last {
					return answer(span{first: pb.firstOffset, next: pb.lastOffset + 1}, nil)
				}
			}
			if prev := st.batches[len(st.batches)-1].lastSeq; !follows(prev, h.BaseSequence) {
				return answer(span{}, fmt.Errorf("%w: producer %d sent sequence %d after %d", errOutOfOrderSequence, h.ProducerID, h.BaseSequence, prev))
			}
		case h.BaseSequence != 0:
			return answer(span{}, fmt.Errorf("%w: producer %d's new epoch %d starts at sequence %d, not 0", errOutOfOrderSequence, h.ProducerID, h.ProducerEpoch, h.BaseSequence))
		}
	}
	first, err := l.AppendBatch(b, storage.InOS)
	if err != nil {
		return span{}, err
	}
	now := time.Now()
	pp.remember(h, first, last, now)
	if now.Sub(pp.lastSweep) > producerSweepEvery {
		pp.lastSweep = now
		for id, st := range pp.producers {
			if now.Sub(st.last) > producerExpiry {
				delete(pp.producers, id)
			}
		}
	}
	return span{first: first, next: first + int64(h.LastOffsetDelta) + 1}, nil
}

// partition returns the producer state of a partition.
func (ps *producerStates) partition(topic string, part int32, l *storage.Log) *partitionProducers {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	k := partitionKey{topic, part}
	pp := ps.parts[k]
	if pp == nil {
		pp = &partitionProducers{}
		ps.parts[k] = pp
	}
	return pp
}

// remember records a batch of h's producer written at first.
func (pp *partitionProducers) remember(h batch.Header, first int64, last int32, now time.Time) {
	st := pp.producers[h.ProducerID]
	if st == nil {
		st = &producerState{epoch: h.ProducerEpoch}
		pp.producers[h.ProducerID] = st
	}
	if h.ProducerEpoch < st.epoch {
		return
	}
	if h.ProducerEpoch > st.epoch {
		st.epoch, st.batches = h.ProducerEpoch, st.batches[:0]
	}
	if len(st.batches) == producerBatches {
		st.batches = append(st.batches[:0], st.batches[1:]...)
	}
	st.batches = append(st.batches, producedBatch{firstSeq: h.BaseSequence, lastSeq: last,
		firstOffset: first, lastOffset: first + int64(h.LastOffsetDelta)})
	st.last, st.lastMs = now, h.MaxTimestamp
}

// activeProducer is one producer of a partition, as DescribeProducers
// reports it.
type activeProducer struct {
	id           int64
	epoch        int16
	lastSequence int32
	lastMs       int64
}

// describe returns the producers the partition knows, by id, its state
// rebuilt from the log's tail first if this is its first use since the
// server started.
func (ps *producerStates) describe(topic string, part int32, l *storage.Log) []activeProducer {
	pp := ps.partition(topic, part, l)
	pp.mu.Lock()
	defer pp.mu.Unlock()
	if pp.log != l {
		pp.log, pp.producers = l, map[int64]*producerState{}
		ps.load(pp, topic, part)
	}
	out := make([]activeProducer, 0, len(pp.producers))
	for id, st := range pp.producers {
		ap := activeProducer{id: id, epoch: st.epoch, lastSequence: -1, lastMs: st.lastMs}
		if n := len(st.batches); n > 0 {
			ap.lastSequence = st.batches[n-1].lastSeq
		}
		out = append(out, ap)
	}
	slices.SortFunc(out, func(a, b activeProducer) int { return cmp.Compare(a.id, b.id) })
	return out
}

// producerReadChunk is how much of the log load reads at a time.
const producerReadChunk = 64 << 10

// load rebuilds pp from the batch headers in the tail of its log. A
// failure to read is logged: the producers it would have found are
// treated as unknown.
func (ps *producerStates) load(pp *partitionProducers, topic string, part int32) {
	l := pp.log
	began := time.Now()
	start, head := l.StartOffset(), l.Head()
	if head <= start {
		return
	}
	perRecord := max(1, l.Size()/(head-start))
	from := max(start, head-ps.scanBytes/perRecord)
	scanned, batches := int64(0), 0
	// The chunk's bytes are read producerReadChunk at a time and the
	// headers parsed from that buffer: a pread per 61-byte header made
	// the first idempotent produce after a restart wait for hundreds of
	// thousands of system calls. A batch larger than the buffer costs a
	// read of its own, for its header.
	buf := make([]byte, producerReadChunk)
	for from < head {
		c, err := l.ReadBatches(from, 1<<20)
		if err != nil {
			ps.log.Warn("kafka: rebuilding producer state: reading the log failed; retries of earlier batches will not be recognized",
				"topic", topic, "partition", part, "offset", from, "err", err)
			return
		}
		if c.Size == 0 {
			break
		}
		end := c.Pos + c.Size
		bufAt, n := c.Pos, 0 // buf[:n] holds the file's bytes from bufAt
		for pos := c.Pos; pos < end; {
			if pos < bufAt || pos+batch.HeaderSize > bufAt+int64(n) {
				want := int(min(int64(len(buf)), end-pos))
				m, err := c.File.ReadAt(buf[:want], pos)
				if m < want { // the chunk's batches are all in the file
					if err == nil || errors.Is(err, io.EOF) {
						err = io.ErrUnexpectedEOF
					}
					c.Release()
					ps.log.Warn("kafka: rebuilding producer state: reading the log failed", "topic", topic, "partition", part, "err", err)
					return
				}
				bufAt, n = pos, m
			}
			h, err := batch.ParseHeader(buf[pos-bufAt : n])
			if err != nil {
				break // ReadBatches checked it: cannot happen
			}
			if h.ProducerID >= 0 && !h.IsControl() {
				pp.remember(h, h.BaseOffset, lastSequence(h), began)
			}
			pos += int64(h.Size())
			batches++
		}
		scanned += c.Size
		from = c.Next
		c.Release()
	}
	ps.log.Debug("kafka: rebuilt producer state", "topic", topic, "partition", part, "bytes", scanned,
		"batches", batches, "producers", len(pp.producers), "took", time.Since(began))
}
