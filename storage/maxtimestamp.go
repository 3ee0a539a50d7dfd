package storage

import "math"

// MaxTimestamp returns the offset and timestamp (ms) of the record with
// the largest timestamp among those kept (from the log start offset to
// the head); of several with that timestamp, the first. found is false
// when the log holds no record. It is Kafka's ListOffsets MAX_TIMESTAMP.
//
// Each segment knows its largest batch timestamp (the batch headers'
// MaxTimestamp, which the time index's last entry holds); the first
// segment with the largest is the one to look in, and its time index
// leads to the batch that raised it there, as OffsetForTime does for a
// timestamp. When that record is not served — below a log start offset
// DeleteRecords moved into the segment, or removed by compaction — every
// kept record is read instead.
func (l *Log) MaxTimestamp() (offset, ms int64, found bool, err error) {
	for again := true; again; {
		again = false
		start := l.start.Load()
		var best *segment
		for _, s := range l.segments() {
			if s.next.Load() <= start {
				continue
			}
			if m := s.maxMs.Load(); m >= 0 && (best == nil || m > best.maxMs.Load()) {
				best = s
			}
		}
		if best == nil {
			break
		}
		if best.base >= start {
			if !best.acquire() {
				if l.closed.Load() {
					return 0, 0, false, ErrClosed
				}
				again = true // deleted by retention, or swapped by the cleaner
				continue
			}
			m := best.maxMs.Load()
			off, ok, err := l.offsetForTimeIn(best, m)
			best.release()
			if err != nil {
				return 0, 0, false, err
			}
			if ok {
				if rec, got, err := l.recordAt(off); err != nil || got && rec == m {
					return off, m, got, err
				}
			}
		}
		return l.scanMaxTimestamp(start)
	}
	return l.scanMaxTimestamp(l.start.Load())
}

// recordAt returns the timestamp of the record at off.
func (l *Log) recordAt(off int64) (ms int64, ok bool, err error) {
	for rec, err := range l.Records(off) {
		if err != nil {
			return 0, false, err
		}
		return rec.Timestamp.UnixMilli(), rec.Offset == off, nil
	}
	return 0, false, nil
}

// scanMaxTimestamp reads every record from start for the largest
// timestamp.
func (l *Log) scanMaxTimestamp(start int64) (offset, ms int64, found bool, err error) {
	ms = math.MinInt64
	for rec, err := range l.Records(start) {
		if err != nil {
			return 0, 0, false, err
		}
		if t := rec.Timestamp.UnixMilli(); !found || t > ms {
			offset, ms, found = rec.Offset, t, true
		}
	}
	if !found {
		return -1, -1, false, nil
	}
	return offset, ms, true, nil
}
