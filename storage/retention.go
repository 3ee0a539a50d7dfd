package storage

import (
	"fmt"
	"path/filepath"
	"slices"
)

// Retain deletes whole closed segments that retention no longer keeps —
// by age (the segment's newest record older than Options.RetentionAge) or
// by size (the total over Options.RetentionBytes) — oldest first, never
// the active segment, and moves the log start offset. It returns the
// number of segments deleted. Retention also runs in the background.
func (l *Log) Retain() (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed.Load() {
		return 0, ErrClosed
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
		byAge := l.o.RetentionAge > 0 && s.maxMs.Load() >= 0 && nowMs-s.maxMs.Load() > l.o.RetentionAge.Milliseconds()
		bySize := l.o.RetentionBytes > 0 && total-s.size.Load() >= l.o.RetentionBytes
		if !byAge && !bySize {
			break
		}
		total -= s.size.Load()
		n++
	}
	if n == 0 {
		return 0, nil
	}
	// Oldest first, and a segment leaves the list only once its .log file
	// is gone: after a failed removal the files on disk and the list still
	// agree, and Open finds no gap between segments. Left-over index files
	// without a .log file are ignored by Open.
	removed := 0
	var err error
	for _, s := range segs[:n] {
		name := filepath.Join(l.dir, segmentName(s.base, ".log"))
		if err = l.fs.Remove(name); err != nil {
			err = fmt.Errorf("storage: retention: remove %s: %w", name, err)
			break
		}
		removed++
		for _, ext := range []string{".index", ".timeindex"} {
			name := filepath.Join(l.dir, segmentName(s.base, ext))
			if rerr := l.fs.Remove(name); rerr != nil && err == nil {
				err = fmt.Errorf("storage: retention: remove %s: %w", name, rerr)
			}
		}
		if err != nil {
			break
		}
	}
	if removed > 0 {
		kept := slices.Clone(segs[removed:])
		l.segs.Store(&kept)
		l.start.Store(kept[0].base)
		for _, s := range segs[:removed] {
			s.release()
			l.o.Logger.Info("retention deleted segment", "dir", l.dir, "base", s.base, "next", s.next.Load())
		}
	}
	if err != nil {
		return removed, err
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return removed, fmt.Errorf("storage: retention: sync directory: %w", err)
	}
	return removed, nil
}
