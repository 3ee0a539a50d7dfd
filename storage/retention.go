package storage

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
)

// Retain deletes whole closed segments that retention no longer keeps —
// by age (the segment's newest record older than Options.RetentionAge) or
// by size (the total over Options.RetentionBytes) — oldest first, never
// the active segment, and moves the log start offset. It returns the
// number of segments deleted. Retention also runs in the background.
//
// Only the choice of segments and their removal from the segment list
// hold the log's lock; their files are removed after it is released, so
// appends and rolls do not wait for the unlinks. A reader that holds a
// deleted segment reads it to its end (its files stay open until it lets
// go). Files a failed removal left behind are removed by the next pass;
// until then they are a prefix of the log on disk, which a reopen takes
// back as its oldest segments.
func (l *Log) Retain() (int, error) {
	l.retainMu.Lock() // one pass at a time, so leftovers and victims stay in order
	defer l.retainMu.Unlock()
	return l.retainLocked()
}

// retainLocked is Retain, with retainMu held. It also deletes the
// segments wholly below a log start offset that DeleteRecords moved.
func (l *Log) retainLocked() (int, error) {
	victims, err := l.detachRetained()
	if err != nil {
		return 0, err
	}
	bases := l.leftover
	l.leftover = nil
	for _, s := range victims {
		// The log lets go before the files go: a reader holding the
		// segment has pinned them open; one that comes later cannot
		// acquire it and looks again (finding the new start).
		s.drop()
		bases = append(bases, s.base)
	}
	if len(bases) == 0 {
		return 0, nil
	}
	removed, err := l.unlinkSegments(bases)
	if len(victims) > 0 {
		l.o.Logger.Info("retention deleted segments", "dir", l.dir, "segments", len(victims),
			"from", victims[0].base, "to", victims[len(victims)-1].next.Load(), "start", l.start.Load())
	}
	if err != nil {
		l.leftover = bases[removed:]
		return len(victims), err
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return len(victims), fmt.Errorf("storage: retention: sync directory: %w", err)
	}
	return len(victims), nil
}

// detachRetained picks the segments retention deletes and takes them out
// of the segment list, under the log's lock.
func (l *Log) detachRetained() ([]*segment, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed.Load() {
		return nil, ErrClosed
	}
	segs := l.segments()
	total := int64(0)
	for _, s := range segs {
		total += s.size.Load()
	}
	nowMs := l.o.Now().UnixMilli()
	n := 0
	for n < len(segs)-1 {
		s := segs[n]
		ms := l.retentionMs(s, nowMs) // a far-future timestamp does not freeze retention
		byAge := l.opt().RetentionAge > 0 && ms >= 0 && nowMs-ms > l.opt().RetentionAge.Milliseconds()
		bySize := l.opt().RetentionBytes > 0 && total-s.size.Load() >= l.opt().RetentionBytes
		belowStart := s.next.Load() <= l.start.Load() // DeleteRecords (logstart.go)
		if !byAge && !bySize && !belowStart {
			break
		}
		total -= s.size.Load()
		n++
	}
	if n == 0 {
		return nil, nil
	}
	kept := slices.Clone(segs[n:])
	l.segs.Store(&kept)
	l.start.Store(max(kept[0].base, l.start.Load()))
	return segs[:n], nil
}

// unlinkSegments removes the files of the segments with the given bases,
// oldest first, each .log file before its indexes: whatever fails, the
// .log files left on disk are a contiguous prefix of the log, with no gap
// before the segments it keeps. It returns how many segments it removed
// whole.
func (l *Log) unlinkSegments(bases []int64) (int, error) {
	for i, base := range bases {
		var errs []error
		for _, ext := range []string{".log", ".index", ".timeindex", ".txnindex"} {
			name := filepath.Join(l.dir, segmentName(base, ext))
			if err := l.fs.Remove(name); err != nil && !isNotExist(err) {
				errs = append(errs, fmt.Errorf("storage: retention: remove %s: %w", name, err))
				if ext == ".log" {
					break
				}
			}
		}
		if err := errors.Join(errs...); err != nil {
			return i, err
		}
	}
	return len(bases), nil
}

func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }
