package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"time"

	"github.com/passbook-log/passbook/batch"
)

// CompactStats reports one compaction: what Compact returns, and what
// the background cleaner logs and adds up in CleanerStats.
type CompactStats struct {
	// DirtyRatio is the share of the closed segments' bytes at or after
	// the first dirty offset, before the compaction.
	DirtyRatio float64 `json:"dirty_ratio"`
	// Passes is the number of key-map passes: more than one when the
	// dirty records' keys did not fit in CleanerBufferBytes.
	Passes int `json:"passes"`
	// Keys is the number of distinct keys in the dirty records (summed
	// over passes).
	Keys int64 `json:"keys"`
	// MapBytes is the memory of the largest key map.
	MapBytes int `json:"map_bytes"`
	// Segments and BytesBefore are the closed segments the compaction
	// covered, before; SegmentsAfter and BytesAfter, after (cleaned
	// segments are merged while they fit in SegmentBytes).
	Segments      int   `json:"segments"`
	SegmentsAfter int   `json:"segments_after"`
	BytesBefore   int64 `json:"bytes_before"`
	BytesAfter    int64 `json:"bytes_after"`
	// BytesRead and BytesWritten are the cleaner's I/O.
	BytesRead    int64 `json:"bytes_read"`
	BytesWritten int64 `json:"bytes_written"`
	// RecordsRemoved counts the records removed: those a newer record of
	// the same key superseded, and TombstonesRemoved tombstones past
	// DeleteRetention.
	RecordsRemoved    int64 `json:"records_removed"`
	TombstonesRemoved int64 `json:"tombstones_removed"`
	// CleanedTo is the first dirty offset after the compaction: below
	// it, the closed segments hold at most one record per key.
	CleanedTo int64 `json:"cleaned_to"`
	// Duration is the compaction's wall time.
	Duration time.Duration `json:"duration_ns"`
}

// CleanerStats is the cleaner's state and its totals since Open, for
// metrics.
type CleanerStats struct {
	CleanedTo  int64   `json:"cleaned_to"`  // the first dirty offset
	DirtyBytes int64   `json:"dirty_bytes"` // bytes of closed segments at or after it
	DirtyRatio float64 `json:"dirty_ratio"` // DirtyBytes over the bytes of the closed segments

	Runs           int64         `json:"runs"`            // compactions, on demand and in the background
	BytesCleaned   int64         `json:"bytes_cleaned"`   // CompactStats.BytesBefore, summed
	BytesRemoved   int64         `json:"bytes_removed"`   // BytesBefore − BytesAfter, summed
	RecordsRemoved int64         `json:"records_removed"` // summed
	Duration       time.Duration `json:"duration_ns"`     // summed
	Last           CompactStats  `json:"last"`            // the last compaction
}

// CleanerStats returns the cleaner's state and totals. It does not wait
// for a compaction in progress.
func (l *Log) CleanerStats() CleanerStats {
	l.clean.mu.Lock()
	c := l.clean.totals
	l.clean.mu.Unlock()
	c.CleanedTo = l.clean.cleaned.Load()
	var total int64
	c.DirtyBytes, total = l.dirtyBytes()
	if total > 0 {
		c.DirtyRatio = float64(c.DirtyBytes) / float64(total)
	}
	return c
}

// dirtyBytes returns the bytes of the closed segments holding offsets at
// or after the first dirty one, and of all closed segments.
func (l *Log) dirtyBytes() (dirty, total int64) {
	segs := l.segments()
	cleaned := l.clean.cleaned.Load()
	for _, s := range segs[:len(segs)-1] {
		n := s.size.Load()
		total += n
		if s.next.Load() > cleaned {
			dirty += n
		}
	}
	return dirty, total
}

// Compact cleans the log now, whatever its dirty ratio: it rewrites the
// closed segments keeping the newest record of each key, removes
// tombstones kept for DeleteRetention since the cleaner first saw them,
// and merges small cleaned segments. The active segment is never touched,
// and no record changes offset. Appends and reads go on meanwhile; ctx
// stops it between batches. It fails with ErrNotCompacted on a log
// without Options.Compact.
func (l *Log) Compact(ctx context.Context) (CompactStats, error) {
	if !l.opt().Compact {
		return CompactStats{}, fmt.Errorf("%w: %s (Options.Compact is off)", ErrNotCompacted, l.dir)
	}
	l.cleanMu.Lock()
	defer l.cleanMu.Unlock()
	if err := l.writable(); err != nil {
		return CompactStats{}, err
	}
	return l.compactLocked(ctx)
}

// cleaner is the background goroutine of a compacted log: every
// CleanerInterval it compacts if the dirty ratio reached MinDirtyRatio or
// tombstones are due for removal.
func (l *Log) cleaner() {
	defer close(l.cleanerDone)
	t := time.NewTicker(l.o.CleanerInterval)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
		l.cleanMu.Lock()
		if l.opt().Compact && l.writable() == nil && l.cleanDueLocked() {
			st, err := l.compactLocked(context.Background())
			switch {
			case err != nil && !errors.Is(err, ErrClosed):
				l.o.Logger.Error("compaction", "dir", l.dir, "err", err)
			case err == nil:
				l.o.Logger.Info("compacted", "dir", l.dir, "bytes_before", st.BytesBefore, "bytes_after", st.BytesAfter,
					"records_removed", st.RecordsRemoved, "keys", st.Keys, "passes", st.Passes, "duration", st.Duration)
			}
		}
		l.cleanMu.Unlock()
	}
}

// cleanDueLocked reports whether the background cleaner has work: the
// dirty ratio reached MinDirtyRatio, or tombstones passed DeleteRetention.
func (l *Log) cleanDueLocked() bool {
	dirty, total := l.dirtyBytes()
	if dirty > 0 && float64(dirty) >= l.opt().MinDirtyRatio*float64(total) {
		return true
	}
	nowMs := l.o.Now().UnixMilli()
	if l.compactionOverdue(l.opt(), nowMs) {
		return true
	}
	for _, m := range l.clean.state.marks {
		if nowMs-m.ms >= l.opt().DeleteRetention.Milliseconds() {
			return true
		}
	}
	return false
}

// errGroupGone stops a pass whose segments retention deleted meanwhile.
var errGroupGone = errors.New("segments deleted by retention during compaction")

// compactLocked runs passes until the first dirty offset reaches the
// active segment. The caller holds cleanMu.
func (l *Log) compactLocked(ctx context.Context) (st CompactStats, err error) {
	began := time.Now()
	defer func() {
		st.Duration = time.Since(began)
		st.CleanedTo = l.clean.cleaned.Load()
		l.clean.mu.Lock()
		t := &l.clean.totals
		t.Runs++
		t.BytesCleaned += st.BytesBefore
		t.BytesRemoved += st.BytesBefore - st.BytesAfter
		t.RecordsRemoved += st.RecordsRemoved
		t.Duration += st.Duration
		t.Last = st
		l.clean.mu.Unlock()
	}()
	segs := l.segments()
	closed := segs[:len(segs)-1]
	if len(closed) == 0 {
		return st, nil
	}
	end := closed[len(closed)-1].next.Load() // the active segment's base
	if lsoEnd := txnCleanEnd(closed, l.LastStableOffset()); lsoEnd < end {
		// Not past an open transaction (txnread.go): its records may
		// still be aborted.
		end = lsoEnd
		if end <= max(l.clean.state.cleaned, segs[0].base) {
			return st, nil
		}
	}
	if lagEnd := compactionLagEnd(l.opt(), closed, end, l.o.Now().UnixMilli()); lagEnd < end {
		end = lagEnd
		if end <= max(l.clean.state.cleaned, segs[0].base) {
			return st, nil // nothing older than min.compaction.lag.ms is dirty
		}
	}
	if dirty, total := l.dirtyBytes(); total > 0 {
		st.DirtyRatio = float64(dirty) / float64(total)
	}
	st.Segments, st.BytesBefore = len(closed), sizeOf(closed)
	defer func() {
		after := l.segments()
		n := sort.Search(len(after), func(i int) bool { return after[i].base >= end })
		st.SegmentsAfter, st.BytesAfter = n, sizeOf(after[:n])
	}()

	cs := l.clean.state
	cs.marks = slices.Clone(cs.marks)
	// Tombstones kept DeleteRetention since a pass first saw them go now.
	nowMs := l.o.Now().UnixMilli()
	cs.marks = slices.DeleteFunc(cs.marks, func(m tombMark) bool {
		if nowMs-m.ms >= l.opt().DeleteRetention.Milliseconds() {
			cs.horizon = max(cs.horizon, m.end)
			return true
		}
		return false
	})
	if cs.swapEnd > cs.swapBase {
		// Before any new .cleaned file: Open must never complete an
		// old swap with a new, uncommitted file of the same name.
		cs.swapBase, cs.swapEnd = 0, 0
		if err := l.writeCleanerLocked(cs); err != nil {
			return st, fmt.Errorf("storage: compaction: %w", err)
		}
	}
	t := throttle{rate: l.o.CleanerIORate, began: time.Now()}
	defer func() { st.BytesRead, st.BytesWritten = t.read, t.written }()
	cleaned := max(cs.cleaned, segs[0].base)
	for {
		if err := ctx.Err(); err != nil {
			return st, err
		}
		m := newKeyMap(l.o.CleanerBufferBytes, cleaned)
		passEnd, err := l.buildKeyMap(ctx, m, cleaned, end, &t)
		st.Passes++
		st.Keys += int64(m.n)
		st.MapBytes = max(st.MapBytes, m.bytes())
		if err == nil {
			p := pass{m: m, dirtyFrom: cleaned, end: passEnd, horizon: cs.horizon, nowMs: nowMs, t: &t}
			err = l.rewrite(ctx, &p, &cs)
			st.RecordsRemoved += p.removed
			st.TombstonesRemoved += p.tombstonesRemoved
			if err == nil {
				p.advance(&cs, passEnd)
			}
		}
		if errors.Is(err, errGroupGone) {
			l.o.Logger.Info("compaction stopped: retention deleted segments it was cleaning", "dir", l.dir)
			return st, nil
		}
		if err != nil {
			return st, l.compactErr(err)
		}
		cs.swapBase, cs.swapEnd = 0, 0
		if err := l.writeCleanerLocked(cs); err != nil {
			return st, l.compactErr(err)
		}
		l.clean.cleaned.Store(passEnd)
		cleaned = passEnd
		if passEnd >= end {
			break
		}
	}
	return st, nil
}

func (l *Log) compactErr(err error) error {
	if errors.Is(err, ErrClosed) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrCorrupt) {
		return err
	}
	return fmt.Errorf("storage: compaction of %s: %w", l.dir, err)
}

// readErr is the error for a batch of s at pos that could not be read:
// corruption if the bytes are wrong, else the I/O error.
func readErr(s *segment, pos int64, err error) error {
	if isDamage(err) {
		return s.corrupt(pos, err)
	}
	return fmt.Errorf("read %s at byte %d: %w", s.path, pos, err)
}

func sizeOf(segs []*segment) int64 {
	var n int64
	for _, s := range segs {
		n += s.size.Load()
	}
	return n
}

// buildKeyMap puts the keys of the records from offset from up to end
// (the base of a segment) into m, and returns where it stopped: end, or
// the offset of the first record whose key did not fit.
func (l *Log) buildKeyMap(ctx context.Context, m *keyMap, from, end int64, t *throttle) (int64, error) {
	var dec batch.Decoder
	for from < end {
		segs := l.segments()
		i := sort.Search(len(segs), func(i int) bool { return segs[i].base > from }) - 1
		if i < 0 {
			return 0, errGroupGone
		}
		s := segs[i]
		if !s.acquire() {
			if l.closed.Load() {
				return 0, ErrClosed
			}
			continue // swapped or deleted meanwhile: look again
		}
		next, stop, err := l.mapSegment(ctx, m, &dec, s, from, end, t)
		s.release()
		if err != nil || stop {
			return next, err
		}
		from = next
	}
	return end, nil
}

// mapSegment puts the keys of s's records from offset from on into m. It
// returns the offset after the segment, or, with stop, the offset of the
// first record whose key did not fit.
func (l *Log) mapSegment(ctx context.Context, m *keyMap, dec *batch.Decoder, s *segment, from, end int64, t *throttle) (int64, bool, error) {
	pos, err := s.idx.lookup(uint32(from - s.base))
	if err != nil {
		return 0, false, fmt.Errorf("%s: %w", s.path, err)
	}
	var r batchReader
	r.reset(s.log, int64(pos), s.size.Load())
	for {
		pos, b, h, err := r.next()
		if err == io.EOF {
			return s.next.Load(), false, nil
		}
		if err == nil {
			_, err = batch.Check(b)
		}
		if err != nil {
			return 0, false, readErr(s, pos, err)
		}
		if err := t.account(ctx, l.stop, len(b), 0); err != nil {
			return 0, false, err
		}
		if h.NextOffset() <= from || h.IsControl() || l.txnAbortedBatch(h) {
			continue // an aborted transaction's records supersede nothing
		}
		for rec, err := range dec.RawRecords(b) {
			if err != nil {
				return 0, false, s.corrupt(pos, err)
			}
			if rec.Offset < from || rec.Key == nil {
				continue
			}
			if rec.Offset >= end {
				return end, true, nil
			}
			if !m.fits(rec.Offset) || !m.put(rec.Key, rec.Offset) {
				return rec.Offset, true, nil
			}
		}
	}
}

// throttle counts the cleaner's I/O, keeps it under rate bytes per second
// (0: no limit), and every so often checks whether it should stop.
type throttle struct {
	rate          int64
	began         time.Time
	read, written int64
	sinceCheck    int
}

const throttleCheck = 256 << 10

// account counts n bytes read and w written; past throttleCheck bytes
// since the last check it returns ctx's error or ErrClosed if the cleaner
// should stop, and sleeps as long as the rate says.
func (t *throttle) account(ctx context.Context, stop <-chan struct{}, n, w int) error {
	t.read += int64(n)
	t.written += int64(w)
	if t.sinceCheck += n + w; t.sinceCheck < throttleCheck {
		return nil
	}
	t.sinceCheck = 0
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case <-stop:
		return ErrClosed
	default:
	}
	if t.rate <= 0 {
		return nil
	}
	due := time.Duration(float64(t.read+t.written) / float64(t.rate) * float64(time.Second))
	if wait := due - time.Since(t.began); wait > 0 {
		timer := time.NewTimer(wait)
		defer timer.Stop()
		select {
		case <-timer.C:
		case <-ctx.Done():
			return ctx.Err()
		case <-stop:
			return ErrClosed
		}
	}
	return nil
}
