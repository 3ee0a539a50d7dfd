package storage

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"reflect"
	"slices"

	"github.com/passbook-log/passbook/vfs"
)

// ProblemTxnIndex: a closed segment's .txnindex that is whole and
// sound but disagrees with the segment's transactional batches and
// markers (the transactions open at its base, or its aborted
// transactions). Open trusts a sound one, so read_committed readers
// would keep or drop the wrong records; repair removes it, and Open
// rebuilds it from the segment. (A missing or damaged one, or the
// active segment's after an unclean shutdown, is only a note: Open
// rebuilds those by itself.)
const ProblemTxnIndex ProblemKind = "transaction index"

// isTxnFile reports whether name is one of the transaction files
// (txnindex.go): TXN or a <base>.txnindex.
func isTxnFile(name string) bool {
	if name == txnMarkFile {
		return true
	}
	ext := filepath.Ext(name)
	_, err := fmt.Sscanf(name, "%020d.txnindex", new(int64))
	return ext == ".txnindex" && err == nil && len(name) == 20+len(".txnindex")
}

// verifyTxns checks the .txnindex files of the segments ps scanned
// against their batches, as Open's recovery would rebuild them. It
// stops at the first damaged segment: what its lost batches did is not
// known.
func verifyTxns(fsys vfs.FS, dir string, names []string, ps *partitionScan) {
	r := ps.report
	note := func(s string) { r.Notes = append(r.Notes, s) }
	if !slices.ContainsFunc(names, isTxnFile) {
		return
	}
	markBase := int64(-1)
	if b, err := vfs.ReadFile(fsys, filepath.Join(dir, txnMarkFile)); err == nil {
		if markBase, err = decodeTxnMark(b); err != nil {
			note(fmt.Sprintf("%s: %v (Open rewrites it)", filepath.Join(dir, txnMarkFile), err))
			markBase = -1
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		note(fmt.Sprintf("%s: %v", filepath.Join(dir, txnMarkFile), err))
	}
	open := map[int64]OpenTxn{}
	for _, s := range ps.segs {
		if len(s.damage) > 0 || s.next < 0 {
			return
		}
		path := txnIndexPath(dir, s.base)
		start := sortedOpen(open)
		var aborted []AbortedTxn
		for sb, err := range ScanSegment(fsys, s.path, s.base) {
			if err != nil || sb.Damaged() {
				return
			}
			eff, err := txnPeek(open, sb.Header, sb.Batch)
			if err != nil {
				return // a control record that does not decode: reported as a batch
			}
			txnCommit(open, eff)
			if eff.aborted != nil {
				aborted = append(aborted, *eff.aborted)
			}
		}
		b, err := vfs.ReadFile(fsys, path)
		if errors.Is(err, fs.ErrNotExist) {
			if markBase >= 0 && (s.base >= markBase || s.next > markBase) {
				note(fmt.Sprintf("%s is missing (Open rebuilds it from the segment)", path))
			}
			continue
		}
		if err != nil {
			note(fmt.Sprintf("%s: %v", path, err))
			continue
		}
		f, err := parseTxnFile(b, s.base)
		if err != nil {
			note(fmt.Sprintf("%s: %v (Open rebuilds it from the segment)", path, err))
			continue
		}
		if s.active {
			// Open trusts it only with a clean-close record that matches
			// the segment's end; otherwise it rebuilds it.
			if f.clean == nil || f.cleanNext != s.next || f.cleanSize != s.size {
				continue
			}
			if got := *f.clean; !sameOpen(got, sortedOpen(open)) {
				s.badTxnIndex = true
				r.Problems = append(r.Problems, Problem{Kind: ProblemTxnIndex, File: path, Pos: -1, From: s.base, To: s.next,
					Detail: fmt.Sprintf("its clean-close record says %d transactions open, the segment leaves %d; repair removes it and Open rebuilds it", len(got), len(open))})
				continue
			}
		}
		if !sameOpen(f.start, start) || !reflect.DeepEqual(nilIfEmpty(f.aborted), nilIfEmpty(aborted)) {
			s.badTxnIndex = true
			r.Problems = append(r.Problems, Problem{Kind: ProblemTxnIndex, File: path, Pos: -1, From: s.base, To: s.next,
				Detail: fmt.Sprintf("it names %d open transactions at the segment's base and %d aborted ones, the segments say %d and %d; repair removes it and Open rebuilds it", len(f.start), len(f.aborted), len(start), len(aborted))})
		}
	}
}

func sortedOpen(m map[int64]OpenTxn) []OpenTxn {
	out := make([]OpenTxn, 0, len(m))
	for _, o := range m {
		out = append(out, o)
	}
	slices.SortFunc(out, func(a, b OpenTxn) int {
		if a.FirstOffset != b.FirstOffset {
			return cmpInt64(a.FirstOffset, b.FirstOffset)
		}
		return cmpInt64(a.ProducerID, b.ProducerID)
	})
	return out
}

func sameOpen(a, b []OpenTxn) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	cmp := func(x, y OpenTxn) int { return cmpInt64(x.ProducerID, y.ProducerID) }
	slices.SortFunc(a, cmp)
	slices.SortFunc(b, cmp)
	return slices.Equal(a, b)
}

func nilIfEmpty(a []AbortedTxn) []AbortedTxn {
	if len(a) == 0 {
		return nil
	}
	return a
}
