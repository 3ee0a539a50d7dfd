package storage

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"

	"github.com/passbook-log/passbook/batch"
	"github.com/passbook-log/passbook/vfs"
)

// pass is one cleaning pass: the key map of the dirty records from
// dirtyFrom up to end, applied to every closed segment below end.
type pass struct {
	m                       *keyMap
	dirtyFrom, end, horizon int64
	nowMs                   int64 // the log's clock when the compaction began
	t                       *throttle

	removed           int64 // records removed, tombstones included
	tombstonesRemoved int64 // tombstones removed past DeleteRetention
	firstSeen         int64 // tombstones kept from the dirty range, not yet in a mark
}

// advance moves the cleaned point in cs to (at most the pass's end) to,
// once every segment below it was rewritten by the pass: below it no key
// appears twice. The tombstones the pass kept from the dirty range so far
// are marked as first seen now.
func (p *pass) advance(cs *cleanerState, to int64) {
	to = min(to, p.end)
	if to <= cs.cleaned {
		return
	}
	cs.cleaned = to
	if p.firstSeen == 0 {
		return
	}
	cs.marks = append(cs.marks, tombMark{end: to, ms: p.nowMs, tombstones: p.firstSeen})
	p.firstSeen = 0
	if len(cs.marks) > maxMarks {
		// Merge the two oldest: their tombstones wait for the later
		// time, which only keeps them longer.
		cs.marks[1].tombstones += cs.marks[0].tombstones
		cs.marks = cs.marks[1:]
	}
}

// keep decides one record's fate.
func (p *pass) keep(r *batch.RawRecord) bool {
	if r.Offset >= p.end || r.Key == nil {
		return true // not covered by the map; no key to compact by
	}
	if newest, ok := p.m.get(r.Key); ok && newest > r.Offset {
		p.removed++
		return false
	}
	if r.Tombstone {
		if r.Offset < p.horizon {
			p.removed++
			p.tombstonesRemoved++
			return false
		}
		if r.Offset >= p.dirtyFrom {
			p.firstSeen++
		}
	}
	return true
}

// rewrite applies the pass to the closed segments below its end, in
// groups of consecutive segments that fit in SegmentBytes together, each
// rewritten into one segment.
func (l *Log) rewrite(ctx context.Context, p *pass, cs *cleanerState) error {
	segs := l.segments()
	var group []*segment
	var size int64
	for _, s := range segs[:len(segs)-1] {
		if s.base >= p.end {
			break
		}
		n := s.size.Load()
		if len(group) > 0 && (size+n > l.opt().SegmentBytes || s.next.Load()-group[0].base > math.MaxUint32) {
			if err := l.cleanGroup(ctx, p, cs, group); err != nil {
				return err
			}
			group, size = nil, 0
		}
		group = append(group, s)
		size += n
	}
	if len(group) == 0 {
		return nil
	}
	return l.cleanGroup(ctx, p, cs, group)
}

// groupCleaner writes the cleaned segment of one group.
type groupCleaner struct {
	l         *Log
	p         *pass
	base, end int64 // the group's offsets
	dec       batch.Decoder
	kept      []byte // encodings of the current batch's kept records
	buf       []byte // a filtered batch
	out       *segment
	closed    bool   // out's files are closed
	committed bool   // CLEANER names the swap: the .cleaned files stay
	fillBuf   []byte // an empty batch
	fill      struct {
		on             bool
		base, last, ms int64
	}
	ctx context.Context
}

// cleanGroup rewrites the segments of group (consecutive, closed) into
// one cleaned segment and swaps it in, unless nothing changes.
func (l *Log) cleanGroup(ctx context.Context, p *pass, cs *cleanerState, group []*segment) (err error) {
	for i, s := range group {
		if !s.acquire() {
			for _, s := range group[:i] {
				s.release()
			}
			if l.closed.Load() {
				return ErrClosed
			}
			return errGroupGone
		}
	}
	defer func() {
		for _, s := range group {
			s.release()
		}
	}()
	g := &groupCleaner{l: l, p: p, ctx: ctx, base: group[0].base, end: group[len(group)-1].next.Load()}
	defer func() {
		if err != nil {
			g.abort()
		}
	}()
	if len(group) > 1 {
		if err := g.open(); err != nil {
			return err
		}
	}
	chain := g.base
	for _, s := range group {
		if s.base != chain {
			return s.corrupt(0, fmt.Errorf("segment starts at offset %d but the previous one ends at %d", s.base, chain))
		}
		var r batchReader
		r.reset(s.log, 0, s.size.Load())
		for {
			pos, b, h, err := r.next()
			if err == io.EOF {
				break
			}
			if err == nil {
				_, err = batch.Check(b)
			}
			if err != nil {
				return readErr(s, pos, err)
			}
			if h.BaseOffset != chain {
				return s.corrupt(pos, fmt.Errorf("batch has base offset %d, the one before it ends at %d", h.BaseOffset, chain))
			}
			chain = h.NextOffset()
			if err := p.t.account(ctx, l.stop, len(b), 0); err != nil {
				return err
			}
			if err := g.batch(s, pos, b, h); err != nil {
				return err
			}
		}
	}
	if chain != g.end {
		return group[len(group)-1].corrupt(group[len(group)-1].size.Load(), fmt.Errorf("segment ends at offset %d, want %d", chain, g.end))
	}
	if g.out == nil {
		return nil // one segment, nothing removed: it stays as it is
	}
	return l.swap(g, group, cs)
}

// batch filters one batch of segment s, at pos, into the cleaned segment.
// Until something changes in a group of one segment, nothing is written.
func (g *groupCleaner) batch(s *segment, pos int64, b []byte, h batch.Header) error {
	g.kept = g.kept[:0]
	n := 0
	if !h.IsControl() {
		want := h.BaseOffset
		for rec, err := range g.dec.RawRecords(b) {
			if err != nil {
				return s.corrupt(pos, err)
			}
			// Records of a dense segment run base, base+1, …; of a
			// cleaned one they only increase inside the batch's span.
			if rec.Offset < want || rec.Offset > h.LastOffset() || (!s.cleaned && rec.Offset != want) {
				return s.corrupt(pos, fmt.Errorf("record at offset %d in the batch of offsets [%d, %d]", rec.Offset, h.BaseOffset, h.LastOffset()))
			}
			want = rec.Offset + 1
			if g.p.keep(&rec) {
				g.kept = append(g.kept, rec.Raw...)
				n++
			}
		}
		if !s.cleaned && want != h.NextOffset() {
			return s.corrupt(pos, fmt.Errorf("batch of offsets [%d, %d] has records up to %d", h.BaseOffset, h.LastOffset(), want-1))
		}
	}
	all := h.IsControl() || n == int(h.RecordCount)
	if g.out == nil {
		if all {
			return nil
		}
		// The first change: write what came before it as it was.
		if err := g.open(); err != nil {
			return err
		}
		if err := g.copyPrefix(s, pos); err != nil {
			return err
		}
	}
	switch {
	case n == 0 && !h.IsControl():
		return g.extendFill(h)
	case all:
		return g.emit(b, h)
	}
	var err error
	if g.buf, err = batch.AppendFiltered(g.buf[:0], b, g.kept, n); err != nil {
		return fmt.Errorf("re-encode the batch at offset %d: %w", h.BaseOffset, err)
	}
	fh, err := batch.ParseHeader(g.buf)
	if err != nil {
		return err
	}
	return g.emit(g.buf, fh)
}

// copyPrefix writes the batches of s before pos to the cleaned segment
// unchanged (empty ones merge with what follows).
func (g *groupCleaner) copyPrefix(s *segment, pos int64) error {
	var r batchReader
	r.reset(s.log, 0, pos)
	for {
		at, b, h, err := r.next()
		if err == io.EOF {
			return nil
		}
		if err == nil {
			_, err = batch.Check(b)
		}
		if err != nil {
			return readErr(s, at, err)
		}
		if err := g.p.t.account(g.ctx, g.l.stop, len(b), 0); err != nil {
			return err
		}
		if h.RecordCount == 0 && !h.IsControl() {
			err = g.extendFill(h)
		} else {
			err = g.emit(b, h)
		}
		if err != nil {
			return err
		}
	}
}

// extendFill adds the offsets of a batch whose records are all gone to
// the empty batch to be written before the next kept one.
func (g *groupCleaner) extendFill(h batch.Header) error {
	f := &g.fill
	if f.on && h.LastOffset()-f.base+1 > batch.MaxEmptySpan {
		if err := g.flushFill(); err != nil {
			return err
		}
	}
	if !f.on {
		f.on, f.base, f.ms = true, h.BaseOffset, -1
	}
	f.last, f.ms = h.LastOffset(), max(f.ms, h.MaxTimestamp)
	return nil
}

func (g *groupCleaner) flushFill() error {
	f := &g.fill
	if !f.on {
		return nil
	}
	f.on = false
	g.fillBuf = batch.AppendEmpty(g.fillBuf[:0], f.base, f.last, f.ms)
	h, err := batch.ParseHeader(g.fillBuf)
	if err != nil {
		return err
	}
	return g.write(g.fillBuf, h)
}

// emit writes a batch kept (whole or filtered) after any pending fill.
func (g *groupCleaner) emit(b []byte, h batch.Header) error {
	if err := g.flushFill(); err != nil {
		return err
	}
	return g.write(b, h)
}

func (g *groupCleaner) write(b []byte, h batch.Header) error {
	if err := g.p.t.account(g.ctx, g.l.stop, 0, len(b)); err != nil {
		return err
	}
	s := g.out
	pos := s.size.Load()
	if _, err := s.log.Write(b); err != nil {
		return fmt.Errorf("write %s: %w", s.path, err)
	}
	if err := s.indexBatch(pos, h, g.l.o.IndexInterval); err != nil {
		return err
	}
	s.size.Store(pos + int64(len(b)))
	s.next.Store(h.NextOffset())
	return nil
}

// open creates the cleaned segment's files, <base>.log.cleaned and its
// indexes.
func (g *groupCleaner) open() error {
	l := g.l
	s := &segment{base: g.base, path: filepath.Join(l.dir, segmentName(g.base, ".log")+cleanedSuffix), firstMs: -1, timeMs: -1}
	s.maxMs.Store(-1)
	s.next.Store(g.base)
	s.sinceIndex, s.sinceTime = l.o.IndexInterval, l.o.IndexInterval
	g.out = s
	create := func(ext string, size int) (vfs.File, error) {
		f, err := l.fs.OpenFile(filepath.Join(l.dir, segmentName(g.base, ext)+cleanedSuffix), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			return nil, fmt.Errorf("create cleaned segment: %w", err)
		}
		return &bufFile{File: f, buf: make([]byte, 0, size)}, nil
	}
	var err error
	if s.log, err = create(".log", 1<<20); err != nil {
		return err
	}
	if s.idx.offFile, err = create(".index", 32<<10); err != nil {
		return err
	}
	s.idx.timeFile, err = create(".timeindex", 32<<10)
	return err
}

// finish completes the cleaned segment's files and makes them durable,
// names included.
func (g *groupCleaner) finish() error {
	if err := g.flushFill(); err != nil {
		return err
	}
	s := g.out
	if err := s.finishTimeIndex(); err != nil {
		return err
	}
	files := []vfs.File{s.log, s.idx.offFile, s.idx.timeFile}
	for _, f := range files {
		if err := f.Sync(); err != nil {
			return fmt.Errorf("sync cleaned segment: %w", err)
		}
	}
	g.closed = true
	for _, f := range files {
		if err := f.Close(); err != nil {
			return fmt.Errorf("close cleaned segment: %w", err)
		}
	}
	return g.l.fs.SyncDir(g.l.dir)
}

// abort removes an uncommitted cleaned segment's files, as far as it can:
// what is left, Open removes.
func (g *groupCleaner) abort() {
	if g.out == nil || g.committed {
		return
	}
	if !g.closed {
		for _, f := range []vfs.File{g.out.log, g.out.idx.offFile, g.out.idx.timeFile} {
			if f != nil {
				f.Close()
			}
		}
	}
	for _, ext := range []string{".log", ".index", ".timeindex"} {
		g.l.fs.Remove(filepath.Join(g.l.dir, segmentName(g.base, ext)+cleanedSuffix))
	}
}

// swap puts the cleaned segment in place of the group: on disk (commit in
// CLEANER, rename, remove, sync; see the package doc) and in the segment
// list, under mu so that retention and rolls see one or the other. A
// failure once the commit started is sticky: Open finishes the swap.
func (l *Log) swap(g *groupCleaner, group []*segment, cs *cleanerState) error {
	if err := g.finish(); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	cur := l.segments()
	i := slices.Index(cur, group[0])
	if i < 0 || i+len(group) >= len(cur) || !slices.Equal(cur[i:i+len(group)], group) {
		return errGroupGone
	}
	for _, s := range group {
		// Readers may still acquire the group after the rename: their
		// files must be the ones replaced, not reopened by name.
		if err := s.holdOpen(); err != nil {
			return fmt.Errorf("hold segment %d open for the swap: %w", s.base, err)
		}
	}
	names, err := l.fs.ReadDir(l.dir)
	if err != nil {
		return fmt.Errorf("list %s: %w", l.dir, err)
	}
	c := *cs
	c.marks = slices.Clone(c.marks)
	c.swapBase, c.swapEnd, c.rewritten = g.base, g.end, max(c.rewritten, g.end)
	firstSeen := g.p.firstSeen
	g.p.advance(&c, g.end) // records below it are gone only if superseded
	g.committed = true
	if err := l.writeCleanerLocked(c); err != nil {
		g.p.firstSeen = firstSeen
		return l.fail(fmt.Errorf("compaction: commit the swap of segment %d: %w", g.base, err))
	}
	*cs = c
	l.clean.cleaned.Store(c.cleaned)
	if err := completeSwap(l.fs, l.dir, names, g.base, g.end); err != nil {
		return l.fail(fmt.Errorf("compaction: swap segment %d: %w", g.base, err))
	}
	s, err := l.openSegment(g.base, false)
	if err != nil {
		return l.fail(fmt.Errorf("compaction: open cleaned segment %d: %w", g.base, err))
	}
	s.cleaned = true
	s.size.Store(g.out.size.Load())
	if err := l.loadFromIndex(s, s.size.Load(), false); err != nil || s.next.Load() != g.end {
		s.drop()
		return l.fail(fmt.Errorf("compaction: load cleaned segment %d (to offset %d, want %d): %w", g.base, s.next.Load(), g.end, err))
	}
	if err := l.txnMerge(s, group); err != nil { // txnrecover.go
		s.drop()
		return l.fail(err)
	}
	segs := slices.Concat(cur[:i], []*segment{s}, cur[i+len(group):])
	l.segs.Store(&segs)
	for _, old := range group {
		old.drop() // the log's reference, which pins nothing: readers may hold theirs
	}
	l.o.Logger.Debug("swapped cleaned segment", "dir", l.dir, "base", g.base, "end", g.end, "segments", len(group), "bytes", s.size.Load())
	return nil
}

// bufFile buffers writes to a file being created, for the cleaner.
type bufFile struct {
	vfs.File
	buf []byte
}

func (f *bufFile) Write(p []byte) (int, error) {
	if len(f.buf)+len(p) > cap(f.buf) {
		if err := f.flush(); err != nil {
			return 0, err
		}
		if len(p) > cap(f.buf) {
			return f.File.Write(p)
		}
	}
	f.buf = append(f.buf, p...)
	return len(p), nil
}

func (f *bufFile) flush() error {
	if len(f.buf) == 0 {
		return nil
	}
	_, err := f.File.Write(f.buf)
	f.buf = f.buf[:0]
	return err
}

func (f *bufFile) Sync() error {
	if err := f.flush(); err != nil {
		return err
	}
	return f.File.Sync()
}

func (f *bufFile) Close() error {
	err := f.flush()
	if cerr := f.File.Close(); err == nil {
		err = cerr
	}
	return err
}
