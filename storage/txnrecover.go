package storage

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/passbook-log/passbook/vfs"
)

// Open's recovery of the transactions (see txnindex.go for the rules).

// txnNoteRebuilt is the rebuild's note, for each batch it re-reads from
// the active segment s, of whether the segment holds transactional
// batches: after a crash, a segment that holds none needs no second read.
func (s *segment) txnNoteRebuilt(transactional bool) {
	s.txn.rebuilt = true
	s.txn.seen = s.txn.seen || transactional
}

// loadTxns rebuilds the open transactions and every segment's aborted
// list once the segments are loaded, rewriting damaged or stale
// .txnindex files from the segments. names are the partition directory's
// entries, as load listed them.
func (l *Log) loadTxns(segs []*segment, names []string) error {
	present := map[int64]bool{}
	for _, n := range names {
		base, ok := strings.CutSuffix(n, ".txnindex")
		if !ok {
			continue
		}
		b, err := strconv.ParseInt(base, 10, 64)
		if err != nil || len(base) != 20 {
			continue
		}
		present[b] = true
	}
	// Indexes of segments retention or compaction removed.
	if err := l.txnMergeOrphans(segs, present); err != nil {
		return err
	}
	files := make([]*txnFile, len(segs)) // nil: missing or damaged
	damaged := make([]bool, len(segs))
	// anyBefore[i]: segment i must have a .txnindex (one before it has
	// one, or TXN says so).
	anyBefore := make([]bool, len(segs)+1)
	for i, s := range segs {
		anyBefore[i+1] = anyBefore[i]
		if !present[s.base] {
			continue
		}
		anyBefore[i+1] = true
		b, err := vfs.ReadFile(l.fs, txnIndexPath(l.dir, s.base))
		if err != nil {
			return fmt.Errorf("read transaction index: %w", err)
		}
		f, err := parseTxnFile(b, s.base)
		if err == nil {
			for _, a := range f.aborted {
				if a.LastOffset >= s.next.Load() {
					// A marker past the segment's end: its tail was cut.
					err = fmt.Errorf("aborted transaction's marker at offset %d is past the segment's end %d", a.LastOffset, s.next.Load())
					break
				}
			}
		}
		if err != nil {
			l.o.Logger.Warn("rebuilding transaction index", "segment", s.path, "reason", err)
			damaged[i] = true
			continue
		}
		files[i] = &f
	}
	last := len(segs) - 1
	markBase, marked := int64(0), false
	if slices.Contains(names, txnMarkFile) {
		b, err := vfs.ReadFile(l.fs, filepath.Join(l.dir, txnMarkFile))
		if err != nil {
			return fmt.Errorf("read %s: %w", txnMarkFile, err)
		}
		if markBase, err = decodeTxnMark(b); err != nil {
			l.o.Logger.Warn("rewriting "+txnMarkFile, "dir", l.dir, "reason", err)
		} else {
			marked = true
		}
	}
	if !marked && !anyBefore[len(segs)] && !segs[last].txn.seen {
		return nil // no transaction ever reached the partition's segments
	}
	if !marked {
		// The first segment with an index, or the active one.
		markBase = segs[last].base
		for i, s := range segs {
			if present[s.base] {
				markBase = segs[i].base
				break
			}
		}
	}
	for i, s := range segs {
		// From the segment holding markBase on, every segment has an
		// index: one that has none lost it.
		if s.base >= markBase || s.next.Load() > markBase {
			for j := i; j < len(segs); j++ {
				anyBefore[j] = true
			}
			break
		}
	}
	if !marked {
		if err := vfs.WriteFileAtomic(l.fs, l.dir, txnMarkFile, encodeTxnMark(markBase)); err != nil {
			return fmt.Errorf("write %s: %w", txnMarkFile, err)
		}
	}
	l.txn.marked, l.txn.markBase = true, markBase
	var start, end []OpenTxn // the open transactions at segs[i]'s base, end
	for i, s := range segs {
		f := files[i]
		switch {
		case f != nil:
			start = f.start
		case i == 0:
			if damaged[i] {
				// What was open at the oldest segment's base began in
				// segments retention deleted: not in the log any more.
				l.o.Logger.Warn("transactions open before the oldest segment are unknown", "segment", s.path)
			}
			start = nil
		default:
			start = end // computed for segment i−1, whose next has no file
		}
		// none: the segment never saw a transaction, nor did any before.
		none := f == nil && !anyBefore[i] && !damaged[i]
		var aborted []AbortedTxn
		scan, write := false, false
		var err error
		if i == last {
			switch {
			case s.txn.rebuilt && !s.txn.seen:
				// Re-read after a crash, no transactional batch in it.
				end, write = start, !none
			case s.txn.rebuilt:
				scan, write = true, true
			case f != nil && f.clean != nil && f.cleanNext == s.next.Load() && f.cleanSize == s.size.Load():
				end, aborted = *f.clean, f.aborted
			case none:
				end = nil
			default:
				scan, write = true, true
			}
		} else {
			switch {
			case damaged[i] || f == nil && anyBefore[i]:
				scan, write = true, true // a damaged or missing index
			case none:
				end = nil
			default:
				aborted = f.aborted
				// The next segment's start comes from its own file,
				// or, when it has none (or a damaged one), from here.
				scan = files[i+1] == nil
			}
		}
		if scan {
			var found []AbortedTxn
			if end, found, err = l.txnScanSegment(s, start); err != nil {
				return err
			}
			if write {
				aborted = found
			}
		}
		if write {
			if err := vfs.WriteFileAtomic(l.fs, l.dir, filepath.Base(txnIndexPath(l.dir, s.base)), encodeTxnFile(start, aborted)); err != nil {
				return fmt.Errorf("rewrite transaction index: %w", err)
			}
		}
		s.txn.has = write || f != nil
		s.txn.start = start
		if len(aborted) > 0 {
			list := slices.Clone(aborted)
			s.txn.aborted.Store(&list)
		}
		if i == last && s.txn.has {
			tf, err := l.fs.OpenFile(txnIndexPath(l.dir, s.base), os.O_RDWR|os.O_APPEND, 0o644)
			if err != nil {
				return fmt.Errorf("open transaction index: %w", err)
			}
			size, err := fileSize(tf)
			if err != nil {
				tf.Close()
				return err
			}
			s.txn.file, s.txn.written = tf, size
		}
	}
	l.txn.set(end)
	return nil
}

// txnScanSegment reads segment s from its start and returns the
// transactions open at its end, given those open at its base, and the
// aborted transactions whose markers it holds.
func (l *Log) txnScanSegment(s *segment, start []OpenTxn) ([]OpenTxn, []AbortedTxn, error) {
	open := make(map[int64]OpenTxn, len(start))
	for _, o := range start {
		open[o.ProducerID] = o
	}
	var aborted []AbortedTxn
	var br batchReader
	br.reset(s.log, 0, s.size.Load())
	for {
		pos, b, h, err := br.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, nil, s.corrupt(pos, err)
		}
		if !isTxnBatch(h) {
			continue
		}
		eff, err := txnPeek(open, h, b)
		if err != nil {
			return nil, nil, s.corrupt(pos, fmt.Errorf("control batch: %w", err))
		}
		txnCommit(open, eff)
		if eff.aborted != nil {
			aborted = append(aborted, *eff.aborted)
		}
	}
	out := make([]OpenTxn, 0, len(open))
	for _, o := range open {
		out = append(out, o)
	}
	slices.SortFunc(out, func(a, b OpenTxn) int { return cmpInt64(a.FirstOffset, b.FirstOffset) })
	return out, aborted, nil
}

// txnMerge gives the segment s, which a compaction swap made from the
// segments of group (s's base is the first's), their transaction
// bookkeeping: the first's open transactions at its base and every
// abort, written to s's .txnindex before the others' are removed (a crash
// in between leaves them for Open, which merges them the same way).
func (l *Log) txnMerge(s *segment, group []*segment) error {
	has := false
	var aborted []AbortedTxn
	for _, g := range group {
		has = has || g.txn.has
		aborted = append(aborted, g.txn.abortedList()...)
	}
	if !has {
		return nil
	}
	if err := vfs.WriteFileAtomic(l.fs, l.dir, filepath.Base(txnIndexPath(l.dir, s.base)), encodeTxnFile(group[0].txn.start, aborted)); err != nil {
		return fmt.Errorf("compaction: write the transaction index of segment %d: %w", s.base, err)
	}
	s.txn.has, s.txn.start = true, group[0].txn.start
	if len(aborted) > 0 {
		s.txn.aborted.Store(&aborted)
	}
	for _, g := range group[1:] {
		if err := l.fs.Remove(txnIndexPath(l.dir, g.base)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("compaction: remove the transaction index of segment %d: %w", g.base, err)
		}
	}
	return nil
}

// txnMergeOrphans folds the .txnindex files of segments a compaction
// swap removed (their base inside another segment) into that segment's,
// at Open, and removes them; an index whose base is in no segment (its
// segment deleted by retention) is removed. present holds the bases of
// the .txnindex files; it is updated.
func (l *Log) txnMergeOrphans(segs []*segment, present map[int64]bool) error {
	into := map[int64][]int64{} // segment base → orphan bases inside it
	var gone []int64
	for b := range present {
		i, found := slices.BinarySearchFunc(segs, b, func(s *segment, b int64) int { return cmpInt64(s.base, b) })
		if found {
			continue
		}
		if i > 0 && b < segs[i-1].next.Load() && present[segs[i-1].base] {
			into[segs[i-1].base] = append(into[segs[i-1].base], b)
		} else {
			gone = append(gone, b)
		}
	}
	for base, orphans := range into {
		slices.Sort(orphans)
		b, err := vfs.ReadFile(l.fs, txnIndexPath(l.dir, base))
		if err != nil {
			return fmt.Errorf("read transaction index: %w", err)
		}
		f, err := parseTxnFile(b, base)
		if err != nil {
			// Damaged: Open rebuilds it from the segment, which holds
			// every marker the orphans indexed.
			gone = append(gone, orphans...)
			continue
		}
		aborted, damaged := f.aborted, false
		for _, o := range orphans {
			ob, err := vfs.ReadFile(l.fs, txnIndexPath(l.dir, o))
			if err != nil {
				return fmt.Errorf("read transaction index: %w", err)
			}
			of, err := parseTxnFile(ob, o)
			if err != nil {
				// Its segment's markers are in base's segment now: a
				// rebuild of that one finds them.
				l.o.Logger.Warn("damaged transaction index of a compacted segment; rebuilding", "segment", base, "index", o, "reason", err)
				damaged = true
				break
			}
			for _, a := range of.aborted {
				if !slices.Contains(aborted, a) {
					aborted = append(aborted, a)
				}
			}
		}
		if damaged {
			// Force the rebuild: no valid index for base.
			if err := l.fs.Remove(txnIndexPath(l.dir, base)); err != nil {
				return fmt.Errorf("remove damaged transaction index: %w", err)
			}
		} else {
			slices.SortFunc(aborted, func(a, b AbortedTxn) int { return cmpInt64(a.LastOffset, b.LastOffset) })
			if err := vfs.WriteFileAtomic(l.fs, l.dir, filepath.Base(txnIndexPath(l.dir, base)), encodeTxnFile(f.start, aborted)); err != nil {
				return fmt.Errorf("merge transaction indexes: %w", err)
			}
		}
		gone = append(gone, orphans...)
	}
	for _, b := range gone {
		if err := l.fs.Remove(txnIndexPath(l.dir, b)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove stale transaction index: %w", err)
		}
		delete(present, b)
	}
	return nil
}
