package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/passbook-log/passbook/batch"
	"github.com/passbook-log/passbook/vfs"
)

// ProblemKind says what kind of problem Verify found.
type ProblemKind string

// The kinds of problem Verify reports.
const (
	// ProblemBatch: bytes in a segment that are not a valid batch where
	// one should be — a bad CRC, header or record — or a valid batch at
	// the wrong offsets. Readers refuse them with ErrCorrupt.
	ProblemBatch ProblemKind = "corrupt batch"
	// ProblemTornTail: an unfinished write at the end of the active
	// segment, after its last fsync. It holds no acknowledged fsync'd
	// record; Open truncates it.
	ProblemTornTail ProblemKind = "torn tail"
	// ProblemOffsets: offsets that are not dense — missing or repeated
	// between two segments.
	ProblemOffsets ProblemKind = "offsets"
	// ProblemIndex: an .index entry that does not lead to the batch it
	// names, or an index file that is not whole entries.
	ProblemIndex ProblemKind = "index"
	// ProblemTimeIndex: a .timeindex entry that disagrees with the
	// timestamps of the segment's batches.
	ProblemTimeIndex ProblemKind = "time index"
	// ProblemCheckpoint: a CHECKPOINT that fails its CRC, or that says
	// more of the active segment was fsync'd than the file holds.
	ProblemCheckpoint ProblemKind = "checkpoint"
	// ProblemFile: a missing or wrong FORMAT file, or a file that cannot
	// be read.
	ProblemFile ProblemKind = "file"
)

// Problem is one thing Verify found wrong, where it found it.
type Problem struct {
	Kind ProblemKind
	File string // path of the file
	Pos  int64  // byte position in File; −1 when it is about the whole file
	// From and To are the offsets [From, To) the problem makes
	// unreadable or missing, when known; To is −1 when the end is not
	// known, and From == To when no record is affected.
	From, To int64
	Detail   string
}

func (p Problem) String() string {
	var b strings.Builder
	b.WriteString(p.File)
	if p.Pos >= 0 {
		fmt.Fprintf(&b, " at byte %d", p.Pos)
	}
	fmt.Fprintf(&b, ": %s: %s", p.Kind, p.Detail)
	switch {
	case p.To < 0:
		fmt.Fprintf(&b, " (offsets from %d)", p.From)
	case p.To > p.From+1:
		fmt.Fprintf(&b, " (offsets %d to %d)", p.From, p.To-1)
	case p.To == p.From+1:
		fmt.Fprintf(&b, " (offset %d)", p.From)
	}
	return b.String()
}

// VerifyOptions configure Verify and Repair. A nil or zero VerifyOptions
// is valid.
type VerifyOptions struct {
	FS vfs.FS // default: the OS file system
	// Progress, if set, is called now and then with the number of
	// segment bytes checked since its previous call.
	Progress func(bytes int64)
}

func (o *VerifyOptions) withDefaults() VerifyOptions {
	var c VerifyOptions
	if o != nil {
		c = *o
	}
	if c.FS == nil {
		c.FS = vfs.OS()
	}
	if c.Progress == nil {
		c.Progress = func(int64) {}
	}
	return c
}

// VerifyReport is what Verify found in one partition.
type VerifyReport struct {
	Dir      string
	Segments int
	Batches  int64 // valid batches
	Records  int64 // records in them
	Bytes    int64 // size of the segment files
	Start    int64 // the base offset of the first segment: the log start
	Head     int64 // the offset after the last valid batch of the last segment
	Problems []Problem
	// Fenced says why Open would refuse the partition, and so why a
	// passbook data directory fences it (serves the rest, answers
	// KAFKA_STORAGE_ERROR for it) until Repair mends it; empty when Open
	// opens it (torn tails and index problems it mends itself; damage in
	// a closed segment's batches only its readers meet).
	Fenced string
	// Notes are things that are not wrong but worth knowing: leftovers
	// of interrupted writes that Open removes, files moved aside by
	// Repair, an active segment whose indexes Open rebuilds.
	Notes []string
}

// OK reports whether Verify found no problem.
func (r *VerifyReport) OK() bool { return len(r.Problems) == 0 }

// Verify checks the partition in dir, which must not be open: it takes
// the partition's lock, so it fails with an error matching vfs.ErrLocked
// while a Log (in any process) has it open. It reads every segment
// whole: every batch's header and CRC-32C, that base offsets run densely
// from segment to segment, that every record decodes at its offset; that
// every .index and .timeindex entry leads to the batch it names; that
// every closed segment's .txnindex agrees with its transactions
// (verify_txn.go); and the CHECKPOINT. It returns what it found; the error is for a partition it
// could not check at all (not a partition, locked, unreadable).
func Verify(dir string, opts *VerifyOptions) (*VerifyReport, error) {
	o := opts.withDefaults()
	lock, err := o.FS.Lock(filepath.Join(dir, lockFile))
	if err != nil {
		return nil, fmt.Errorf("storage: verify %s: %w", dir, err)
	}
	defer lock.Close()
	ps, err := scanPartition(o.FS, dir, o.Progress)
	if err != nil {
		return nil, fmt.Errorf("storage: verify %s: %w", dir, err)
	}
	return ps.report, nil
}

// partitionScan is what scanPartition learns, for Verify's report and
// Repair's plan.
type partitionScan struct {
	dir    string
	report *VerifyReport
	segs   []*segScan
	cp     checkpoint
	cpBad  bool     // CHECKPOINT exists and fails its checks
	tmp    []string // *.tmp files (interrupted atomic writes)
	gaps   gapRule
	// cleanerBad: CLEANER exists and fails its checks.
	cleanerBad bool
	// logStartBad: LOGSTART exists and fails its checks (logstart.go).
	logStartBad bool
	// refusing marks the problems (by index in report.Problems) of a
	// file that makes Open refuse the partition; see openRefuses.
	refusing map[int]bool
}

// segScan is what scanning one segment found.
type segScan struct {
	base    int64
	path    string
	size    int64
	active  bool
	next    int64 // the offset after the last valid batch; −1 if none after the last damage
	damage  []damageRange
	torn    bool  // damage[len−1] is a torn tail
	runPos  int64 // the last run of valid batches after the last damage starts here
	runBase int64 // … at this offset
	// badIndex is set when the index files disagree with the segment.
	badIndex bool
	// badTxnIndex: its .txnindex is sound but disagrees with it
	// (verify_txn.go).
	badTxnIndex bool
}

// damageRange is a stretch of a segment that is not valid batches.
type damageRange struct {
	pos, end int64 // bytes
	from, to int64 // offsets that should be there; to −1: not known
	err      error
	h        batch.Header
	headerOK bool
	crcOK    bool
}

func scanPartition(fsys vfs.FS, dir string, progress func(int64)) (*partitionScan, error) {
	names, err := fsys.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	r := &VerifyReport{Dir: dir, Start: 0, Head: 0}
	ps := &partitionScan{dir: dir, report: r, refusing: map[int]bool{}}
	problem := func(p Problem) { r.Problems = append(r.Problems, p) }
	refused := func(p Problem) {
		ps.refusing[len(r.Problems)] = true
		problem(p)
	}
	format, err := vfs.ReadFile(fsys, filepath.Join(dir, formatFile))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if !slices.ContainsFunc(names, func(n string) bool { return strings.HasSuffix(n, ".log") }) {
			return nil, fmt.Errorf("%w: %s has no FORMAT file and no segment", ErrNotPartition, dir)
		}
		refused(Problem{Kind: ProblemFile, File: filepath.Join(dir, formatFile), Pos: -1, Detail: "missing; Open refuses the directory"})
	case err != nil:
		refused(Problem{Kind: ProblemFile, File: filepath.Join(dir, formatFile), Pos: -1, Detail: err.Error()})
	default:
		var ce *CorruptError
		if ps.gaps, err = readGapRule(fsys, dir, string(format)); errors.As(err, &ce) {
			// Without it, every closed segment may have been cleaned.
			ps.cleanerBad, ps.gaps = true, gapRule{rewritten: 1<<63 - 1}
			refused(Problem{Kind: ProblemFile, File: ce.File, Pos: ce.Pos, Detail: ce.Err.Error() + "; Open refuses the partition"})
		} else if err != nil {
			refused(Problem{Kind: ProblemFile, File: filepath.Join(dir, formatFile), Pos: 0, Detail: err.Error()})
		}
	}
	var bases []int64
	for _, n := range names {
		switch base, ok := SegmentBase(n); {
		case ok && strings.HasSuffix(n, ".log") && ps.gaps.swapped(base):
			r.Notes = append(r.Notes, fmt.Sprintf("%s is replaced by a cleaned segment when Open completes the swap CLEANER names", filepath.Join(dir, n)))
		case ok && strings.HasSuffix(n, ".log"):
			bases = append(bases, base)
		case ok && ps.gaps.swapped(base):
		case ok:
			if !slices.Contains(names, segmentName(base, ".log")) {
				r.Notes = append(r.Notes, fmt.Sprintf("%s has no .log file (left over by retention; Open ignores it)", filepath.Join(dir, n)))
			}
		case isTxnFile(n): // verify_txn.go
			if b, ok := strings.CutSuffix(n, ".txnindex"); ok && !slices.Contains(names, b+".log") {
				r.Notes = append(r.Notes, fmt.Sprintf("%s has no .log file (its segment was deleted or compacted into another; Open merges or removes it)", filepath.Join(dir, n)))
			}
		case strings.HasSuffix(n, ".tmp"):
			ps.tmp = append(ps.tmp, n)
			r.Notes = append(r.Notes, fmt.Sprintf("%s is an interrupted write (Open removes it)", filepath.Join(dir, n)))
		case isCleanedFile(n):
			if !ps.gaps.swapPending() {
				r.Notes = append(r.Notes, fmt.Sprintf("%s is a cleaned segment whose swap never committed (Open removes it)", filepath.Join(dir, n)))
			}
		case isAside(n):
			r.Notes = append(r.Notes, fmt.Sprintf("%s was moved aside by repair (read it with passbook dump)", filepath.Join(dir, n)))
		case n == formatFile || n == lockFile || n == checkpointFile || n == logStartFile || isGapRuleFile(n):
		default:
			r.Notes = append(r.Notes, fmt.Sprintf("%s is not a passbook file", filepath.Join(dir, n)))
		}
	}
	slices.Sort(bases)
	cpPath := filepath.Join(dir, checkpointFile)
	ps.cp, err = readCheckpoint(fsys, dir)
	var ce *CorruptError
	switch {
	case err == nil && ps.cp.torn:
		ps.cpBad = true
		problem(Problem{Kind: ProblemCheckpoint, File: cpPath, Pos: 0, Detail: "checkpoint crc mismatch: torn by a power loss during its in-place update; Open re-validates the active segment without it"})
	case errors.As(err, &ce):
		ps.cpBad = true
		refused(Problem{Kind: ProblemCheckpoint, File: cpPath, Pos: 0, Detail: ce.Err.Error() + "; Open refuses the partition"})
	case err != nil:
		refused(Problem{Kind: ProblemFile, File: cpPath, Pos: -1, Detail: err.Error()})
	}
	r.Segments = len(bases)
	var prevNext int64 = -1
	for i, base := range bases {
		active := i == len(bases)-1
		limit := int64(-1)
		if !active {
			limit = bases[i+1]
		}
		s, probs, err := scanOneSegment(fsys, dir, base, limit, ps, progress)
		if err != nil {
			refused(Problem{Kind: ProblemFile, File: filepath.Join(dir, segmentName(base, ".log")), Pos: -1, Detail: err.Error()})
			prevNext = -1
			continue
		}
		// A damaged end of a closed segment runs up to the next base.
		if i > 0 && prevNext < 0 {
			if prev := ps.segs[len(ps.segs)-1]; len(prev.damage) > 0 {
				d := &prev.damage[len(prev.damage)-1]
				if d.end == prev.size && d.to < 0 {
					d.to = base
					fixTo(r.Problems, prev.path, d.pos, base)
				}
			}
		}
		if i == 0 {
			r.Start = base
		} else if prevNext >= 0 && base != prevNext {
			if base > prevNext {
				problem(Problem{Kind: ProblemOffsets, File: s.path, Pos: 0, From: prevNext, To: base,
					Detail: fmt.Sprintf("segment starts at offset %d but the one before it ends at %d: offsets missing", base, prevNext)})
			} else {
				problem(Problem{Kind: ProblemOffsets, File: s.path, Pos: 0, From: base, To: base,
					Detail: fmt.Sprintf("segment starts at offset %d but the one before it ends at %d: offsets repeated", base, prevNext)})
			}
		}
		r.Problems = append(r.Problems, probs...)
		ps.segs = append(ps.segs, s)
		prevNext = s.next
		if s.next >= 0 {
			r.Head = s.next
		}
	}
	if ls, err := readLogStart(fsys, dir); err != nil { // logstart.go
		ps.logStartBad = true
		refused(Problem{Kind: ProblemFile, File: filepath.Join(dir, logStartFile), Pos: 0, Detail: err.Error() + "; Open refuses the partition"})
	} else if ls > r.Start {
		r.Start = min(ls, r.Head)
	}
	verifyTxns(fsys, dir, names, ps)
	r.Fenced = openRefuses(ps)
	if len(bases) > 0 {
		a := ps.segs[len(ps.segs)-1]
		if !ps.cpBad && ps.cp.base == a.base && ps.cp.pos > a.size {
			problem(Problem{Kind: ProblemCheckpoint, File: a.path, Pos: a.size,
				Detail: fmt.Sprintf("CHECKPOINT says %d bytes were fsync'd, the file has %d: fsync'd bytes are gone", ps.cp.pos, a.size)})
		}
	}
	return ps, nil
}

// openRefuses returns why Open would refuse the partition ps found, or
// "": a FORMAT missing, unreadable or not one Open knows, a bad CLEANER,
// a bad or unreadable CHECKPOINT, an unreadable segment file, offsets missing or repeated between segments, a damaged
// batch in the active segment before its recovery point (one past it is a
// torn tail, which Open truncates), or in a closed segment whose index
// Open must rebuild from its batches (as verify judges the index: Open
// may find it whole and open the partition).
func openRefuses(ps *partitionScan) string {
	active := ""
	if len(ps.segs) > 0 {
		active = ps.segs[len(ps.segs)-1].path
	}
	rebuilt := map[string]bool{} // closed segments whose index Open rebuilds from the batches
	for _, s := range ps.segs {
		rebuilt[s.path] = s.badIndex
	}
	for i, p := range ps.report.Problems {
		switch {
		case ps.refusing[i],
			p.Kind == ProblemOffsets,
			p.Kind == ProblemBatch && (p.File == active || rebuilt[p.File]):
			return p.String()
		}
	}
	return ""
}

// fixTo sets the end offset of the problem reported at file and pos.
func fixTo(ps []Problem, file string, pos, to int64) {
	for i := range ps {
		if ps[i].File == file && ps[i].Pos == pos && ps[i].To < 0 {
			ps[i].To = to
		}
	}
}

// scanOneSegment checks one segment and its index files.
// limit is the next segment's base (−1 for the active segment): its
// batches must end by it.
func scanOneSegment(fsys vfs.FS, dir string, base, limit int64, ps *partitionScan, progress func(int64)) (*segScan, []Problem, error) {
	active := limit < 0
	s := &segScan{base: base, path: filepath.Join(dir, segmentName(base, ".log")), active: active, runBase: base}
	suffix := ""
	if ps.gaps.swapPending() && base == ps.gaps.swapBase {
		if p, ok := cleanedPath(fsys, s.path); ok {
			// Open completes the swap: check the segment it will have.
			s.path, suffix = p, cleanedSuffix
		}
	}
	f, err := fsys.OpenFile(s.path, os.O_RDONLY, 0)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	if s.size, err = fileSize(f); err != nil {
		return nil, nil, err
	}
	ps.report.Bytes += s.size
	// The active segment's indexes are rebuilt by Open unless the last
	// shutdown was clean and the file is as the checkpoint left it.
	checkIdx := !active || !ps.cpBad && ps.cp.clean && ps.cp.base == base && ps.cp.pos == s.size
	if !checkIdx {
		ps.report.Notes = append(ps.report.Notes, fmt.Sprintf("%s is the active segment of a log not closed cleanly: Open re-validates it and rebuilds its indexes", s.path))
	}
	var probs []Problem
	ix := newIndexCheck(fsys, dir, base, suffix, checkIdx)
	synced := int64(0)
	if !ps.cpBad {
		synced = recoveryPoint(ps.cp, base)
	}
	var sc segScanner
	sc.reset(f, s.size, base)
	sc.gaps = ps.gaps.inside(base, active)
	sc.limit = limit
	s.next = base
	reported := int64(0)
	for sb, err := range sc.walk(reportAll) {
		if err != nil {
			return nil, nil, err
		}
		if done := sb.Pos + sb.Size - reported; done >= 1<<20 {
			progress(done)
			reported = sb.Pos + sb.Size
		}
		if !sb.Damaged() {
			ps.report.Batches++
			ps.report.Records += int64(sb.Header.RecordCount)
			ix.batch(sb.Pos, sb.Header)
			if s.next < 0 {
				s.runPos, s.runBase = sb.Pos, sb.Header.BaseOffset
			}
			s.next = sb.Header.NextOffset()
			continue
		}
		from := s.next
		if from < 0 {
			from = s.damage[len(s.damage)-1].from
		}
		d := damageRange{pos: sb.Pos, end: sb.Pos + sb.Size, from: from, to: -1, err: sb.Err, h: sb.Header, headerOK: sb.HeaderOK, crcOK: sb.CRCOK}
		// Open's rule: the first damage past the recovery point is a torn
		// tail, whatever follows it, and Open truncates there.
		torn := len(s.damage) == 0 && tornTail(active, d.pos, synced)
		if torn {
			d.end = s.size
		}
		ix.damaged(d.pos, d.end)
		if d.end < s.size {
			d.to = sc.expect // the next valid batch's base is at least this; fixed below
			if next, ok := peekBase(f, d.end, s.size); ok {
				d.to = next
			}
		}
		s.damage = append(s.damage, d)
		s.next = -1
		kind, detail := ProblemBatch, sb.Err.Error()
		if torn && allocatedTail(f, d.pos, s.size) { // mapwrite.go
			s.torn = true
			ps.report.Notes = append(ps.report.Notes, fmt.Sprintf("%s ends with %d bytes of space allocated past its last batch and never written (the mapped write path; Open truncates them)", s.path, s.size-d.pos))
			break
		}
		if torn {
			s.torn, kind = true, ProblemTornTail
			detail = fmt.Sprintf("%d bytes of an unfinished write after the last fsync (Open truncates them): %v", d.end-d.pos, sb.Err)
			if sb.Pos+sb.Size < s.size {
				detail += fmt.Sprintf("; the %d bytes after the damage were not fsync'd either, and go with it (pages written back out of order)", s.size-sb.Pos-sb.Size)
			}
			probs = append(probs, Problem{Kind: kind, File: s.path, Pos: d.pos, From: d.from, To: d.to, Detail: detail})
			break
		} else if d.end > d.pos+int64(max(sb.Header.Size(), 0)) && d.end < s.size {
			detail += fmt.Sprintf("; the next valid batch is at byte %d", d.end)
		}
		probs = append(probs, Problem{Kind: kind, File: s.path, Pos: d.pos, From: d.from, To: d.to, Detail: detail})
	}
	if done := s.size - reported; done > 0 {
		progress(done)
	}
	if s.torn {
		// Open truncates it: the segment ends before it.
		s.next, s.torn = s.damage[0].from, true
	}
	probs = append(probs, ix.finish(s)...)
	s.badIndex = ix.bad
	return s, probs, nil
}

// peekBase returns the base offset of the batch at pos.
func peekBase(f vfs.File, pos, size int64) (int64, bool) {
	var b [8]byte
	if pos+8 > size {
		return 0, false
	}
	if _, err := f.ReadAt(b[:], pos); err != nil {
		return 0, false
	}
	return int64(binary.BigEndian.Uint64(b[:])), true
}
