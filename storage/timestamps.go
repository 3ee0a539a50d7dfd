package storage

import (
	"fmt"
	"math"
	"time"

	"github.com/passbook-log/passbook/batch"
	"github.com/passbook-log/passbook/internal/thousands"
)

// Producers choose their records' timestamps; the broker's clock decides
// what the log does with them. An append whose timestamps are too far
// from the broker's clock fails with ErrInvalidTimestamp (Kafka's
// message.timestamp.before.max.ms and message.timestamp.after.max.ms,
// INVALID_TIMESTAMP over Kafka), and the time-based roll of a segment
// counts by the broker's clock, so that no producer clock can roll more
// than one segment per Options.SegmentAge.

// NoTimestampLimit, as Options.TimestampBeforeMax or TimestampAfterMax,
// accepts any timestamp on that side of the broker's clock (Kafka's
// Long.MAX_VALUE).
const NoTimestampLimit = time.Duration(math.MaxInt64)

// defaultTimestampAfterMax is Kafka 4's message.timestamp.after.max.ms.
const defaultTimestampAfterMax = time.Hour

// checkTimestamps refuses timestamps (Unix milliseconds) outside the
// window the options allow around now.
func (l *Log) checkTimestamps(oldest, newest int64, now time.Time) error {
	nowMs := now.UnixMilli()
	if b := l.opt().TimestampBeforeMax; b > 0 && b != NoTimestampLimit && nowMs-oldest > b.Milliseconds() {
		return fmt.Errorf("%w: timestamp %s is %s ms before the broker's clock (%s); message.timestamp.before.max.ms is %s",
			ErrInvalidTimestamp, formatMs(oldest), thousands.Int(nowMs-oldest), formatMs(nowMs), thousands.Int(b.Milliseconds()))
	}
	if a := l.opt().TimestampAfterMax; a != NoTimestampLimit && newest-nowMs > a.Milliseconds() {
		return fmt.Errorf("%w: timestamp %s is %s ms after the broker's clock (%s); message.timestamp.after.max.ms is %s",
			ErrInvalidTimestamp, formatMs(newest), thousands.Int(newest-nowMs), formatMs(nowMs), thousands.Int(a.Milliseconds()))
	}
	return nil
}

// checkRecordTimestamps is checkTimestamps for the records given to
// Append: those with a zero Timestamp get now.
func (l *Log) checkRecordTimestamps(recs []batch.Record, now time.Time) error {
	for i := range recs {
		if t := recs[i].Timestamp; !t.IsZero() {
			if err := l.checkTimestamps(t.UnixMilli(), t.UnixMilli(), now); err != nil {
				return fmt.Errorf("record %d: %w", i, err)
			}
		}
	}
	return nil
}

func formatMs(ms int64) string { return time.UnixMilli(ms).UTC().Format(time.RFC3339Nano) }

// rollClock is where the active segment's age counts from, by the
// broker's clock: the time of its first append in this process, or, for
// the active segment found on Open, its first record's timestamp if that
// is in the past (so a restart does not put off a roll that is due, and
// a timestamp of 1970 rolls it at most once).
type rollClock struct {
	seg *segment
	ms  int64
}

// ageRollDueLocked reports whether the active segment s is old enough to
// roll before an append at nowMs. writeLocked starts the clock of the
// segment it rolls to.
func (l *Log) ageRollDueLocked(s *segment, nowMs int64) bool {
	if l.roll.seg != s {
		since := nowMs
		if s.size.Load() > 0 && s.firstMs >= 0 && s.firstMs < nowMs {
			since = s.firstMs
		}
		l.roll = rollClock{seg: s, ms: since}
	}
	return s.size.Load() > 0 && nowMs-l.roll.ms >= rollAge(l.opt()).Milliseconds()
}

// retentionMs is the newest timestamp of the closed segment s as
// time-based retention counts it (Kafka's: the segment's largest
// timestamp). A timestamp more than TimestampAfterMax ahead of now can
// only be in a segment written before that limit was checked (or with it
// off); one such record must not keep the segment, and every segment
// after it, forever. Its records were written by the file's last
// modification, so none was legitimately newer than that plus
// TimestampAfterMax: retention counts from there. Only such a segment
// costs a stat.
func (l *Log) retentionMs(s *segment, nowMs int64) int64 {
	ms := s.maxMs.Load()
	after := l.opt().TimestampAfterMax
	if after == NoTimestampLimit || ms <= nowMs+after.Milliseconds() {
		return ms
	}
	fi, err := l.fs.Stat(s.path)
	if err != nil || fi.ModTime().IsZero() {
		return ms
	}
	return min(ms, fi.ModTime().UnixMilli()+after.Milliseconds())
}
