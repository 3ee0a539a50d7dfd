package storage

import (
	"errors"
	"fmt"
	"time"

	"github.com/passbook-log/passbook/batch"
)

// The settings Reconfigure changes on an open log. Everything else in
// Options (the file system, the clock, the index interval, the file
// cache, the cleaner's buffer and rate) is fixed at Open.
//
// Readers of a live setting load the current Options once per use
// (opt); a change applies to the next append, roll, retention pass or
// cleaning, never half-way through one.

// opt is the log's current Options: those of Open, with every live
// setting as the last Reconfigure left it.
func (l *Log) opt() *Options { return l.live.Load() }

// Options returns the log's current options, defaults applied.
func (l *Log) Options() Options { return *l.opt() }

// Reconfigure changes the live settings of an open log to those of o:
// SegmentBytes, SegmentAge, MaxRecordBytes, MaxBatchBytes,
// MaxMessageBytes, RetentionBytes, RetentionAge, Compact,
// DeleteRetention, MinDirtyRatio, MinCompactionLag, MaxCompactionLag,
// TimestampBeforeMax, TimestampAfterMax, LogAppendTime and Compression.
// Zero fields take their defaults, as at Open; the other fields of o are
// ignored. It fails, changing nothing, when o does not validate.
//
// Turning Compact on starts the background cleaner (and from then on
// appends without a key fail with ErrNoKey); turning it off stops
// cleaning, and the segments already cleaned stay as they are.
func (l *Log) Reconfigure(o Options) error {
	if err := o.Validate(); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed.Load() {
		return ErrClosed
	}
	cur := *l.opt()
	set := o.withDefaults()
	cur.SegmentBytes, cur.SegmentAge = set.SegmentBytes, set.SegmentAge
	cur.MaxRecordBytes, cur.MaxBatchBytes, cur.MaxMessageBytes = set.MaxRecordBytes, set.MaxBatchBytes, set.MaxMessageBytes
	cur.RetentionBytes, cur.RetentionAge = set.RetentionBytes, set.RetentionAge
	cur.Compact, cur.DeleteRetention, cur.MinDirtyRatio = set.Compact, set.DeleteRetention, set.MinDirtyRatio
	cur.MinCompactionLag, cur.MaxCompactionLag = set.MinCompactionLag, set.MaxCompactionLag
	cur.TimestampBeforeMax, cur.TimestampAfterMax = set.TimestampBeforeMax, set.TimestampAfterMax
	cur.LogAppendTime, cur.Compression = set.LogAppendTime, set.Compression
	l.live.Store(&cur)
	if cur.Compact && l.cleanerDone == nil {
		l.cleanerDone = make(chan struct{})
		go l.cleaner()
	}
	return nil
}

// validateLive checks the settings tune.go adds to Options.
func (o *Options) validateLive() error {
	var errs []error
	if o.MaxMessageBytes < 0 {
		errs = append(errs, fmt.Errorf("max message bytes %d is negative", o.MaxMessageBytes))
	}
	if o.MaxMessageBytes > maxSegmentBytes/2 {
		errs = append(errs, fmt.Errorf("max message bytes %d over %d", o.MaxMessageBytes, maxSegmentBytes/2))
	}
	if o.MinCompactionLag < 0 || o.MaxCompactionLag < 0 {
		errs = append(errs, errors.New("compaction lags must not be negative"))
	}
	if o.MaxCompactionLag > 0 && o.MinCompactionLag > o.MaxCompactionLag {
		errs = append(errs, fmt.Errorf("min compaction lag %v over max compaction lag %v", o.MinCompactionLag, o.MaxCompactionLag))
	}
	if o.Compression != nil && (*o.Compression < batch.None || *o.Compression > batch.Zstd) {
		errs = append(errs, fmt.Errorf("unknown compression codec %d", *o.Compression))
	}
	return errors.Join(errs...)
}

// Codec returns a pointer to c, for Options.Compression.
func Codec(c batch.Codec) *batch.Codec { return &c }

// prepareBatch applies the topic's broker-side settings to a producer's
// batch b, already validated by dec (its header h), before it is
// written: the codec of Options.Compression (recompressing when it
// differs from the batch's) and the broker's time for LogAppendTime. It
// returns the batch to write, which is b itself when nothing changed its
// size, or a new one in buf, and then checks Options.MaxMessageBytes on
// the stored size, as Kafka checks max.message.bytes again after a
// recompression. The caller holds mu.
func (l *Log) prepareBatch(o *Options, b []byte, h batch.Header, now time.Time) ([]byte, batch.Header, error) {
	if o.Compression != nil && *o.Compression != h.Codec() && !h.IsControl() {
		nb, err := recompress(l.buf[:0], b, h, *o.Compression, &l.dec)
		if err != nil {
			return nil, h, fmt.Errorf("%w: recompress to %s: %w", ErrInvalidBatch, *o.Compression, err)
		}
		l.buf = nb
		if h, err = batch.ParseHeader(nb); err != nil {
			return nil, h, fmt.Errorf("%w: recompressed batch: %w", ErrInvalidBatch, err)
		}
		b = nb
		if o.MaxMessageBytes > 0 && len(b) > o.MaxMessageBytes {
			return nil, h, fmt.Errorf("%w: %d bytes once compressed with %s, max.message.bytes %d", ErrBatchTooLarge, len(b), *o.Compression, o.MaxMessageBytes)
		}
	}
	if o.LogAppendTime {
		batch.SetLogAppendTime(b, now)
		var err error
		if h, err = batch.ParseHeader(b); err != nil {
			return nil, h, fmt.Errorf("%w: %w", ErrInvalidBatch, err)
		}
	}
	return b, h, nil
}

// recompress appends to dst the batch b (header h) with its records
// encoded again with codec c, keeping its producer ID, epoch, base
// sequence, transactional bit, offsets and timestamps.
func recompress(dst, b []byte, h batch.Header, c batch.Codec, dec *batch.Decoder) ([]byte, error) {
	var recs []batch.Record
	for r, err := range dec.Records(b) {
		if err != nil {
			return dst, err
		}
		recs = append(recs, r.Clone())
	}
	bo := batch.Options{BaseOffset: h.BaseOffset, Codec: c, Now: time.UnixMilli(h.BaseTimestamp)}
	if h.ProducerID >= 0 {
		bo.Idempotent, bo.ProducerID, bo.ProducerEpoch, bo.BaseSequence = true, h.ProducerID, h.ProducerEpoch, h.BaseSequence
	}
	start := len(dst)
	dst, err := batch.Append(dst, recs, bo)
	if err != nil {
		return dst, err
	}
	if h.Attributes&batch.AttrTransactional != 0 {
		batch.SetTransactional(dst[start:])
	}
	return dst, nil
}

// compactionLagEnd is where the cleaner stops for MinCompactionLag: the
// base of the first closed segment holding a record newer than the lag
// (by its largest timestamp, as Kafka counts), or end when none does.
func compactionLagEnd(o *Options, closed []*segment, end, nowMs int64) int64 {
	if o.MinCompactionLag <= 0 {
		return end
	}
	for _, s := range closed {
		if ms := s.maxMs.Load(); ms >= 0 && nowMs-ms < o.MinCompactionLag.Milliseconds() {
			return min(end, s.base)
		}
	}
	return end
}

// compactionOverdue reports whether a dirty closed segment holds a record
// older than MaxCompactionLag (by the segment's first timestamp): the
// cleaner then runs whatever the dirty ratio, as Kafka's does.
func (l *Log) compactionOverdue(o *Options, nowMs int64) bool {
	if o.MaxCompactionLag <= 0 {
		return false
	}
	segs := l.segments()
	cleaned := l.clean.cleaned.Load()
	for _, s := range segs[:len(segs)-1] {
		if s.next.Load() > cleaned && s.firstMs >= 0 && nowMs-s.firstMs > o.MaxCompactionLag.Milliseconds() {
			return true
		}
	}
	return false
}

// rollAge is how old the active segment may grow: SegmentAge, or a
// compacted log's MaxCompactionLag when shorter (Kafka's maxSegmentMs),
// so that no record waits in the active segment past the lag.
func rollAge(o *Options) time.Duration {
	if o.Compact && o.MaxCompactionLag > 0 && o.MaxCompactionLag < o.SegmentAge {
		return o.MaxCompactionLag
	}
	return o.SegmentAge
}
