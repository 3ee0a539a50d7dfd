package storage

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/passbook-log/passbook/batch"
	"github.com/passbook-log/passbook/vfs"
)

// RepairOptions configure Repair. A nil or zero RepairOptions is valid.
type RepairOptions struct {
	FS vfs.FS // default: the OS file system
	// DryRun makes Repair report what it would do, and do nothing.
	DryRun bool
	// Now names the files moved aside; default time.Now.
	Now func() time.Time
	// Progress, if set, is called now and then with the number of
	// segment bytes checked since its previous call.
	Progress func(bytes int64)
}

// RepairAction is one thing Repair did, or with DryRun would do.
type RepairAction struct {
	// What: "truncate", "rebuild index", "move aside", "salvage",
	// "create", "remove".
	What   string
	File   string // the file acted on
	Detail string
	// From and To are the offsets [From, To) the action took out of the
	// log; From == To when it took none.
	From, To int64
}

func (a RepairAction) String() string {
	s := fmt.Sprintf("%s %s: %s", a.What, a.File, a.Detail)
	if a.To > a.From {
		s += fmt.Sprintf(" (offsets %d to %d no longer in the log)", a.From, a.To-1)
	}
	return s
}

// RepairReport says what Repair found and did.
type RepairReport struct {
	Dir     string
	Before  *VerifyReport  // what Verify found first
	Actions []RepairAction // in the order done
	// Start and Head are the log's extent after the repair.
	Start, Head int64
	// Lost is how many offsets are no longer in the log: in damaged
	// batches, and in intact segments moved aside with them because
	// offsets must stay dense.
	Lost int64
	// After is what Verify finds once Repair is done (nil with DryRun).
	After *VerifyReport
}

// File names Repair gives what it moves aside: the original name plus
// one of these and a UTC time. Open ignores such files; nothing deletes
// them.
const (
	asideCorrupt = ".corrupt-" // a damaged segment file
	asideIntact  = ".aside-"   // an intact segment moved aside to keep offsets dense
	asideTorn    = ".torn-"    // the bytes of a torn tail that Repair truncated
)

// isAside reports whether name is a file Repair moved aside.
func isAside(name string) bool {
	return strings.Contains(name, asideCorrupt) || strings.Contains(name, asideIntact) || strings.Contains(name, asideTorn)
}

// Repair fixes the partition in dir, which must not be open (it takes the
// partition's lock), so that Open accepts it and readers find no damage,
// and never deletes a byte of a record:
//
//   - a torn tail of the active segment is truncated, after its bytes are
//     copied to <segment>.log.torn-<time>;
//   - index and time index files that disagree with their segment are
//     rebuilt;
//   - a damaged segment is moved aside (its files renamed
//     <name>.corrupt-<time>). Its valid batches after the last damage are
//     copied into a new segment named by their first offset. Because
//     offsets stay dense and are never reused, the segments before it are
//     moved aside too (<name>.aside-<time>): the log then starts after the
//     damage, as if retention had deleted everything before it, and a
//     consumer behind that point is told of the gap. If nothing valid
//     follows the damage in the last segment, the log continues with an
//     empty segment at the offset where the damaged one ended;
//   - a CHECKPOINT that fails its CRC is moved aside.
//
// It then opens and closes the log, so that the engine itself rebuilds
// indexes and records a clean shutdown, and verifies it again. The report
// lists every action and the offsets each took out of the log.
func Repair(dir string, opts *RepairOptions) (*RepairReport, error) {
	var o RepairOptions
	if opts != nil {
		o = *opts
	}
	if o.FS == nil {
		o.FS = vfs.OS()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Progress == nil {
		o.Progress = func(int64) {}
	}
	lock, err := o.FS.Lock(filepath.Join(dir, lockFile))
	if err != nil {
		return nil, fmt.Errorf("storage: repair %s: %w", dir, err)
	}
	ps, err := scanPartition(o.FS, dir, o.Progress)
	if err != nil {
		lock.Close()
		return nil, fmt.Errorf("storage: repair %s: %w", dir, err)
	}
	rp := &repairPlan{fs: o.FS, dir: dir, dry: o.DryRun, stamp: o.Now().UTC().Format("20060102T150405Z")}
	rep := &RepairReport{Dir: dir, Before: ps.report, Start: ps.report.Start, Head: ps.report.Head}
	if ps.gaps.swapPending() && !ps.cleanerBad {
		// Finish the cleaner's swap first, as Open would, so that what
		// follows works on the segments Open will see.
		err = rp.completeSwap(ps)
		if err == nil && !o.DryRun {
			ps, err = scanPartition(o.FS, dir, func(int64) {})
		}
	}
	if err == nil {
		err = rp.run(ps, rep)
	}
	rep.Actions = rp.actions
	lock.Close()
	if err != nil || o.DryRun {
		if err != nil {
			err = fmt.Errorf("storage: repair %s: %w", dir, err)
		}
		return rep, err
	}
	// The engine finishes the job: it rebuilds the emptied indexes,
	// re-validates the active segment and records a clean shutdown.
	l, err := Open(dir, &Options{FS: o.FS})
	if err != nil {
		return rep, fmt.Errorf("storage: repair %s: open after repair: %w", dir, err)
	}
	rep.Start, rep.Head = l.StartOffset(), l.Head()
	if err := l.Close(); err != nil {
		return rep, fmt.Errorf("storage: repair %s: close after repair: %w", dir, err)
	}
	if rep.After, err = Verify(dir, &VerifyOptions{FS: o.FS}); err != nil {
		return rep, err
	}
	return rep, nil
}

// repairPlan does (or, dry, lists) the actions.
type repairPlan struct {
	fs      vfs.FS
	dir     string
	dry     bool
	stamp   string
	actions []RepairAction
	changed bool // the directory's entries changed: sync it
}

func (rp *repairPlan) do(a RepairAction, fn func() error) error {
	rp.actions = append(rp.actions, a)
	if rp.dry {
		return nil
	}
	if err := fn(); err != nil {
		return fmt.Errorf("%s %s: %w", a.What, a.File, err)
	}
	return nil
}

func (rp *repairPlan) path(name string) string { return filepath.Join(rp.dir, name) }

// rename moves a file aside, if it exists.
func (rp *repairPlan) rename(name, mark string) error {
	if _, err := rp.fs.Stat(rp.path(name)); err != nil {
		return nil
	}
	rp.changed = true
	return rp.fs.Rename(rp.path(name), rp.path(name+mark+rp.stamp))
}

func (rp *repairPlan) run(ps *partitionScan, rep *RepairReport) error {
	for _, n := range ps.tmp {
		if err := rp.do(RepairAction{What: "remove", File: rp.path(n), Detail: "an interrupted atomic write"}, func() error {
			rp.changed = true
			return rp.fs.Remove(rp.path(n))
		}); err != nil {
			return err
		}
	}
	if ps.cpBad {
		if err := rp.do(RepairAction{What: "move aside", File: rp.path(checkpointFile), Detail: "fails its checks; Open re-validates the active segment without it"}, func() error {
			return rp.rename(checkpointFile, asideCorrupt)
		}); err != nil {
			return err
		}
	}
	if ps.logStartBad {
		if err := rp.do(RepairAction{What: "move aside", File: rp.path(logStartFile), Detail: "fails its checks; the partition starts at its first segment again, and records DeleteRecords had hidden in it are served until trimmed again"}, func() error {
			return rp.rename(logStartFile, asideCorrupt)
		}); err != nil {
			return err
		}
	}
	if ps.cleanerBad {
		// Rebuilt conservatively: every closed segment may have been
		// cleaned (its batches may skip offsets), nothing is known to
		// be clean yet, no tombstone is due for removal.
		st := cleanerState{rewritten: ps.report.Head}
		if n := len(ps.segs); n > 0 {
			st.rewritten = ps.segs[n-1].base
		}
		a := RepairAction{What: "rewrite", File: rp.path(cleanerFile),
			Detail: fmt.Sprintf("fails its checks; moved aside, and replaced by one that lets every closed segment be a cleaned one (rewritten point %d) and has the cleaner start over", st.rewritten)}
		if err := rp.do(a, func() error {
			if err := rp.rename(cleanerFile, asideCorrupt); err != nil {
				return err
			}
			return vfs.WriteFileAtomic(rp.fs, rp.dir, cleanerFile, st.encode())
		}); err != nil {
			return err
		}
	}
	if _, err := rp.fs.Stat(rp.path(formatFile)); err != nil && len(ps.segs) > 0 {
		line := formatLine
		if _, err := rp.fs.Stat(rp.path(cleanerFile)); err == nil {
			line = formatLine2
		}
		if err := rp.do(RepairAction{What: "create", File: rp.path(formatFile), Detail: "the partition's FORMAT file was missing"}, func() error {
			return vfs.WriteFileAtomic(rp.fs, rp.dir, formatFile, []byte(line))
		}); err != nil {
			return err
		}
	}
	keep, err := rp.cut(ps, rep)
	if err != nil {
		return err
	}
	for i, s := range keep {
		if s.torn && i == len(keep)-1 {
			if err := rp.truncateTorn(s); err != nil {
				return err
			}
		}
		if s.badIndex {
			a := RepairAction{What: "rebuild index", File: rp.path(segmentName(s.base, ".index")), Detail: "its index files disagree with the segment; Open rebuilds them from it"}
			if err := rp.do(a, func() error { return rp.emptyIndexes(s.base) }); err != nil {
				return err
			}
		}
		if s.badTxnIndex {
			a := RepairAction{What: "remove", File: rp.path(segmentName(s.base, ".txnindex")), Detail: "it disagrees with the segment's transactions; Open rebuilds it from the segment"}
			if err := rp.do(a, func() error { return rp.fs.Remove(rp.path(segmentName(s.base, ".txnindex"))) }); err != nil {
				return err
			}
		}
	}
	if rp.changed && !rp.dry {
		return rp.fs.SyncDir(rp.dir)
	}
	return nil
}

// cut moves aside the last damaged segment and everything before it,
// salvaging its valid tail, and returns the segments kept.
func (rp *repairPlan) cut(ps *partitionScan, rep *RepairReport) ([]*segScan, error) {
	k := -1
	for i, s := range ps.segs {
		if len(s.damage) > 0 && !s.torn {
			k = i
		}
		if i > 0 {
			prev := ps.segs[i-1]
			end := prev.next
			if end >= 0 && end != s.base {
				k = max(k, i-1)
			}
		}
	}
	if k < 0 {
		return ps.segs, nil
	}
	s := ps.segs[k]
	// Where the log starts again, and what of s survives.
	var salvage bool
	var newStart int64
	switch {
	case len(s.damage) == 0:
		// Intact, but followed by a gap: it goes, whole.
		newStart = ps.segs[k+1].base
	case s.next >= 0 && (k == len(ps.segs)-1 || s.next == ps.segs[k+1].base):
		// Its valid tail runs to where the next segment starts.
		salvage, newStart = true, s.runBase
	case k+1 < len(ps.segs):
		newStart = ps.segs[k+1].base
	default:
		newStart = damagedEnd(s)
	}
	for i := 0; i <= k; i++ {
		seg := ps.segs[i]
		mark, why := asideIntact, "intact, but before the damage: moved aside so that offsets stay dense"
		if i == k && len(seg.damage) > 0 {
			mark, why = asideCorrupt, fmt.Sprintf("damaged at byte %d: %v", seg.damage[0].pos, seg.damage[0].err)
		}
		from, to := seg.base, newStart
		if i < k {
			to = ps.segs[i+1].base
		}
		a := RepairAction{What: "move aside", File: seg.path, Detail: fmt.Sprintf("%s; renamed to %s", why, filepath.Base(seg.path)+mark+rp.stamp), From: from, To: max(to, from)}
		if err := rp.do(a, func() error {
			for _, ext := range []string{".log", ".index", ".timeindex"} {
				if err := rp.rename(segmentName(seg.base, ext), mark); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			return nil, err
		}
		rep.Lost += a.To - a.From
	}
	rep.Start = newStart
	var err error
	if salvage {
		a := RepairAction{What: "salvage", File: rp.path(segmentName(s.runBase, ".log")),
			Detail: fmt.Sprintf("the valid batches after the damage, bytes %d to %d of %s, offsets %d to %d", s.runPos, s.size, filepath.Base(s.path), s.runBase, s.next-1)}
		err = rp.do(a, func() error { return rp.salvage(s, rp.path(filepath.Base(s.path)+asideCorrupt+rp.stamp)) })
		if k == len(ps.segs)-1 {
			rep.Head = s.next
		}
	} else if k == len(ps.segs)-1 {
		a := RepairAction{What: "create", File: rp.path(segmentName(newStart, ".log")),
			Detail: fmt.Sprintf("an empty active segment: the log continues at offset %d, where the damaged one ended, so no offset is reused", newStart)}
		err = rp.do(a, func() error { return rp.createEmpty(newStart) })
		rep.Head = newStart
	}
	if err != nil {
		return nil, err
	}
	kept := ps.segs[k+1:]
	if salvage {
		t := *s
		t.base, t.path, t.damage, t.torn, t.badIndex, t.badTxnIndex = s.runBase, rp.path(segmentName(s.runBase, ".log")), nil, false, false, false
		kept = append([]*segScan{&t}, kept...)
	}
	return kept, nil
}

// damagedEnd is where the damaged last segment s ended, as far as can
// be told, erring late so that no offset is reused: the damage's known
// end; else, when the damaged batch passes its CRC (so only its base
// offset is wrong), the offsets its header spans; else, when its base
// offset is intact, the larger
// of the record counts its header claims (its record count and last
// offset delta), each believed only if that many records fit in its
// bytes; else the first offset lost.
func damagedEnd(s *segScan) int64 {
	d := s.damage[len(s.damage)-1]
	if d.to >= 0 {
		return d.to
	}
	if d.crcOK {
		return d.from + int64(d.h.LastOffsetDelta) + 1
	}
	if d.h.BaseOffset != d.from {
		return d.from
	}
	limit := int64(1 << 20) // a compressed batch's records take next to no bytes
	if d.h.Codec() == 0 {
		limit = (d.end-d.pos-batch.HeaderSize)/7 + 1 // a record takes at least 7 bytes
	}
	n := int64(0)
	for _, c := range []int64{int64(d.h.RecordCount), int64(d.h.LastOffsetDelta) + 1} {
		if c >= 1 && c <= limit {
			n = max(n, c)
		}
	}
	return d.from + n
}

// salvage copies s's last run of valid batches, from the file moved aside
// to from, into a new segment named by their first offset.
func (rp *repairPlan) salvage(s *segScan, from string) error {
	src, err := rp.fs.OpenFile(from, os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	defer src.Close()
	return rp.writeSegment(s.runBase, io.NewSectionReader(src, s.runPos, s.size-s.runPos))
}

func (rp *repairPlan) createEmpty(base int64) error {
	return rp.writeSegment(base, strings.NewReader(""))
}

// writeSegment creates the segment at base with the bytes of r and empty
// indexes, fsync'd, and syncs the directory.
func (rp *repairPlan) writeSegment(base int64, r io.Reader) error {
	rp.changed = true
	for _, ext := range []string{".index", ".timeindex", ".log"} {
		f, err := rp.fs.OpenFile(rp.path(segmentName(base, ext)), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			return err
		}
		if ext == ".log" {
			if _, err := io.Copy(f, r); err != nil {
				f.Close()
				return err
			}
		}
		if err := f.Sync(); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	return rp.fs.SyncDir(rp.dir)
}

// completeSwap completes the swap CLEANER names, as Open does, and
// clears it, so that nothing Repair writes is taken for part of it.
func (rp *repairPlan) completeSwap(ps *partitionScan) error {
	g := ps.gaps
	a := RepairAction{What: "complete swap", File: rp.path(segmentName(g.swapBase, ".log")),
		Detail: fmt.Sprintf("the cleaner committed this cleaned segment in place of the segments from offset %d to %d; finished as Open would", g.swapBase, g.swapEnd)}
	return rp.do(a, func() error {
		names, err := rp.fs.ReadDir(rp.dir)
		if err != nil {
			return err
		}
		if err := completeSwap(rp.fs, rp.dir, names, g.swapBase, g.swapEnd); err != nil {
			return err
		}
		st := g.state
		st.swapBase, st.swapEnd = 0, 0
		return vfs.WriteFileAtomic(rp.fs, rp.dir, cleanerFile, st.encode())
	})
}

// truncateTorn copies the torn tail of the active segment s aside, then
// truncates it.
func (rp *repairPlan) truncateTorn(s *segScan) error {
	d := s.damage[0]
	aside := filepath.Base(s.path) + asideTorn + rp.stamp
	a := RepairAction{What: "truncate", File: s.path,
		Detail: fmt.Sprintf("a torn tail of %d bytes at byte %d, after the last fsync (no acknowledged fsync'd record); its bytes saved to %s", d.end-d.pos, d.pos, aside)}
	return rp.do(a, func() error {
		f, err := rp.fs.OpenFile(s.path, os.O_RDWR, 0)
		if err != nil {
			return err
		}
		defer f.Close()
		out, err := rp.fs.OpenFile(rp.path(aside), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			return err
		}
		_, err = io.Copy(out, io.NewSectionReader(f, d.pos, d.end-d.pos))
		if err == nil {
			err = out.Sync()
		}
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			rp.changed = true
			err = rp.fs.SyncDir(rp.dir)
		}
		if err == nil {
			err = f.Truncate(d.pos)
		}
		if err == nil {
			err = f.Sync()
		}
		return err
	})
}

// emptyIndexes truncates a segment's index files; Open rebuilds them.
func (rp *repairPlan) emptyIndexes(base int64) error {
	var errs []error
	for _, ext := range []string{".index", ".timeindex"} {
		f, err := rp.fs.OpenFile(rp.path(segmentName(base, ext)), os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if err := f.Truncate(0); err != nil {
			errs = append(errs, err)
		} else if err := f.Sync(); err != nil {
			errs = append(errs, err)
		}
		f.Close()
	}
	return errors.Join(errs...)
}
