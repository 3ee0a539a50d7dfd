package storage

import (
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/passbook-log/passbook/batch"
	"github.com/passbook-log/passbook/vfs"
)

// SegmentBatch is one stretch of a segment file as ScanSegment finds it:
// a batch that passes every check, or a damaged range.
type SegmentBatch struct {
	// Pos is the byte position where the batch (or the damage) starts.
	Pos int64
	// Size is the batch's size, or the length of the damaged range: the
	// bytes up to the next valid batch, or to the end of the file.
	Size int64
	// Header is the batch's header. For damage it is whatever the bytes
	// at Pos parse as, and HeaderOK says whether they parsed at all.
	Header   batch.Header
	HeaderOK bool
	// CRCOK says whether the bytes pass their CRC-32C: for damage, that
	// only a field the CRC does not cover (the base offset) is wrong, or
	// what the CRC covers is not sound records.
	CRCOK bool
	// Batch is the whole batch, for a valid one; nil for damage. It is
	// valid until the iteration moves on.
	Batch []byte
	// Err says what is wrong; nil for a valid batch. It matches
	// batch.ErrCorrupt, batch.ErrShort or batch.ErrMagic for bytes that
	// are not a valid batch, and ErrCorrupt for a valid batch at the
	// wrong offsets.
	Err error
}

// Damaged reports whether the stretch is damage rather than a batch.
func (b SegmentBatch) Damaged() bool { return b.Err != nil }

// SegmentFile is the name of the segment file (the .log) whose first
// batch has base offset base, as in 00000000000000051234.log.
func SegmentFile(base int64) string { return segmentName(base, ".log") }

// SegmentBase returns the base offset that a segment file's name says,
// as in 00000000000000051234.log (or .index, .timeindex).
func SegmentBase(path string) (int64, bool) {
	name := filepath.Base(path)
	i := strings.IndexByte(name, '.')
	if i != 20 {
		return 0, false
	}
	switch name[i:] {
	case ".log", ".index", ".timeindex":
	default:
		return 0, false
	}
	b, err := strconv.ParseInt(name[:i], 10, 64)
	return b, err == nil && b >= 0
}

// ScanSegment reads the segment file at path (named by its base offset
// base) from its start and yields every batch in it, checked as a reader
// checks it — header, CRC-32C, base offsets continuing from base, and
// every record decoding at its offset — and every damaged range between
// valid batches. After damage it resumes at the next valid batch whose
// base offset does not go back, so one bad batch does not hide the rest
// of the file. It is for forensics and verification; it does not lock the
// partition. A read error ends the iteration with that error.
func ScanSegment(fsys vfs.FS, path string, base int64) iter.Seq2[SegmentBatch, error] {
	return func(yield func(SegmentBatch, error) bool) {
		if fsys == nil {
			fsys = vfs.OS()
		}
		f, err := fsys.OpenFile(path, os.O_RDONLY, 0)
		if err != nil {
			yield(SegmentBatch{}, err)
			return
		}
		defer f.Close()
		size, err := fileSize(f)
		if err != nil {
			yield(SegmentBatch{}, err)
			return
		}
		var sc segScanner
		sc.reset(f, size, base)
		sc.gaps = mayBeCleaned(fsys, path, base)
		sc.walk(reportAll)(yield)
	}
}

// segScanner is the one segment walker: it reads a segment file batch by
// batch and holds the one rule of what a stored batch must be to fit its
// place — its base offset following the one before (or, after damage,
// not going back) and, unless trusted, its framing (checkFraming), its
// record count and last offset delta agreeing (except in a cleaned
// segment, see the package doc's gap rule), its end not past the next
// segment's base, its CRC-32C and every record decoding at its offset. Open's
// recovery (Log.rebuild, Log.loadFromIndex), a failed write's recovery
// (Log.recoverWritesLocked), Verify (scanOneSegment) and ScanSegment all
// walk with it, so that they agree on what is damage; they differ only in
// their damagePolicy.
type segScanner struct {
	f      vfs.File
	size   int64
	br     batchReader
	expect int64 // base offset the next batch must have
	gaps   bool  // records may skip offsets inside a batch (a cleaned segment)
	jump   bool  // after damage: the next batch may start past expect
	limit  int64 // batches end by this offset (the next segment's base); −1: no limit
	// trusted: the segment's index files vouch for its batches (a clean
	// shutdown, or a closed segment): only the offset chain is checked,
	// to find the segment's end; the rest readers check batch by batch as
	// they read, and Verify reports (a bad batch in such a segment does
	// not stop Open).
	trusted bool
	scratch []byte // validAt's buffer
	window  []byte // resync's buffer
	cur     batch.Cursor
}

func (sc *segScanner) reset(f vfs.File, size, base int64) {
	sc.f, sc.size, sc.expect, sc.jump, sc.limit, sc.trusted = f, size, base, false, -1, false
	sc.br.reset(f, 0, size)
}

// seek moves the scanner to byte pos, where a batch with base offset
// expect starts.
func (sc *segScanner) seek(pos, expect int64) {
	sc.br.reset(sc.f, pos, sc.size)
	sc.expect, sc.jump = expect, false
}

// damagePolicy says what a walk does where the bytes are not a batch that
// fits its place.
type damagePolicy int

const (
	// stopAtDamage is Open's policy, and a failed write's recovery: the
	// walk yields the first damage and ends there. The caller judges it
	// with tornTail: a torn tail is truncated, anything else refused.
	stopAtDamage damagePolicy = iota
	// reportAll is Verify's and ScanSegment's: each damaged range is
	// yielded whole (its Size runs to the next valid batch) and the walk
	// resumes at the next valid batch whose base offset does not go back,
	// so that one bad batch does not hide the rest of the file.
	reportAll
)

// walk yields, from the scanner's position to the end of the file, every
// valid batch and, as the policy says, the damage. A read error ends the
// walk with that error.
func (sc *segScanner) walk(p damagePolicy) iter.Seq2[SegmentBatch, error] {
	return func(yield func(SegmentBatch, error) bool) {
		for {
			sb, err := sc.read()
			if err == io.EOF {
				return
			}
			if err == nil && sb.Damaged() && p == reportAll {
				sb, err = sc.skipDamage(sb)
			}
			if !yield(sb, err) || err != nil || sb.Damaged() && p == stopAtDamage {
				return
			}
		}
	}
}

// skipDamage finds where valid batches start again after the damage sb,
// moves the scanner there and returns sb with its Size running up to it.
func (sc *segScanner) skipDamage(sb SegmentBatch) (SegmentBatch, error) {
	// Offsets are missing here, so the next valid batch may start past
	// the expected one.
	sc.jump = true
	at, rerr := sc.resync(sb.Pos, sb.Header, sb.HeaderOK)
	if rerr != nil {
		return SegmentBatch{}, rerr
	}
	sc.br.reset(sc.f, at, sc.size)
	sb.Size = at - sb.Pos
	return sb, nil
}

// read returns the batch at the scanner's position, checked, or io.EOF;
// it does not look past damage (its Size is the damaged batch's own, or 0
// when its header did not parse).
func (sc *segScanner) read() (SegmentBatch, error) {
	pos, b, h, err := sc.br.next()
	if err == io.EOF {
		return SegmentBatch{}, io.EOF
	}
	if err != nil && !isDamage(err) {
		return SegmentBatch{}, fmt.Errorf("read %s at byte %d: %w", sc.f.Name(), pos, err)
	}
	// The header parsed unless reading it failed: a batch cut short by
	// the end of the file still has a header.
	headerOK := err == nil || errors.Is(err, batch.ErrShort) && h.Magic == batch.Magic && h.Length >= batch.HeaderSize-batch.LengthOverhead
	crcOK := false
	switch {
	case err != nil:
	case sc.trusted:
		err = sc.checkChain(h)
	default:
		if _, err = batch.Check(b); err == nil {
			crcOK = true
			if err = sc.checkPlace(h); err == nil {
				err = sc.checkRecords(b, h)
			}
		}
	}
	if err == nil {
		sc.expect, sc.jump = h.NextOffset(), false
		return SegmentBatch{Pos: pos, Size: int64(h.Size()), Header: h, HeaderOK: true, CRCOK: crcOK, Batch: b}, nil
	}
	size := int64(0)
	if headerOK {
		size = int64(max(h.Size(), 0))
	}
	return SegmentBatch{Pos: pos, Size: size, Header: h, HeaderOK: headerOK, CRCOK: crcOK, Err: err}, nil
}

// checkChain checks that a batch's base offset follows the one before
// it: the expected one, or after damage one not before it.
func (sc *segScanner) checkChain(h batch.Header) error {
	if h.BaseOffset < sc.expect || h.BaseOffset > sc.expect && !sc.jump {
		return fmt.Errorf("%w: batch has base offset %d, want %d", ErrCorrupt, h.BaseOffset, sc.expect)
	}
	return nil
}

// checkPlace checks that a batch's header fits where it was read: the
// fields outside the CRC, its offset chain and its record count.
func (sc *segScanner) checkPlace(h batch.Header) error {
	if err := checkFraming(h); err != nil {
		return err
	}
	if err := sc.checkChain(h); err != nil {
		return err
	}
	switch {
	case h.RecordCount < 1 && !sc.gaps:
		return fmt.Errorf("%w: batch has no records", ErrCorrupt)
	case h.LastOffsetDelta != h.RecordCount-1 && !sc.gaps, h.RecordCount > h.LastOffsetDelta+1:
		return fmt.Errorf("%w: batch has %d records and last offset delta %d", ErrCorrupt, h.RecordCount, h.LastOffsetDelta)
	}
	if sc.limit >= 0 && h.NextOffset() > sc.limit {
		return fmt.Errorf("%w: batch runs to offset %d, past the next segment's base %d", ErrCorrupt, h.LastOffset(), sc.limit)
	}
	return nil
}

// checkRecords checks that every record of a batch whose CRC and place
// were checked decodes at its offset.
func (sc *segScanner) checkRecords(b []byte, h batch.Header) error {
	if err := sc.cur.Reset(b); err != nil {
		return err
	}
	want := h.BaseOffset
	for {
		rec, ok := sc.cur.Next()
		if !ok {
			break
		}
		if rec.Offset < want || rec.Offset > want && !sc.gaps || rec.Offset > h.LastOffset() {
			return fmt.Errorf("%w: record of the batch at offset %d has offset %d, want %d", ErrCorrupt, h.BaseOffset, rec.Offset, want)
		}
		want = rec.Offset + 1
	}
	if err := sc.cur.Err(); err != nil {
		return err
	}
	if !sc.gaps && want != h.NextOffset() {
		return fmt.Errorf("%w: batch at offset %d has records up to %d, its header says %d", ErrCorrupt, h.BaseOffset, want-1, h.LastOffset())
	}
	return nil
}

// resync returns the position of the first valid batch after the damage
// at pos — one that passes its checks and whose base offset is at least
// the expected one — or the file size when there is none. When the
// damaged batch's header parsed, the position its length points to is
// tried first.
func (sc *segScanner) resync(pos int64, h batch.Header, headerOK bool) (int64, error) {
	if headerOK && h.Length > 0 {
		if at := pos + int64(h.Size()); at < sc.size {
			ok, err := sc.validAt(at)
			if err != nil || ok {
				return at, err
			}
		}
	}
	const window = 1 << 20
	if want := int(min(window+batch.HeaderSize, sc.size-pos)); cap(sc.window) < want {
		sc.window = make([]byte, want)
	}
	buf := sc.window[:cap(sc.window)]
	for from := pos + 1; from < sc.size; from += window {
		n, err := sc.f.ReadAt(buf[:min(int64(len(buf)), sc.size-from)], from)
		if err != nil && !errors.Is(err, io.EOF) {
			return 0, fmt.Errorf("read %s at byte %d: %w", sc.f.Name(), from, err)
		}
		for i := 0; i < min(n, window); i++ {
			// The magic byte and the header's own sense are the cheap
			// filters, on the bytes at hand; validAt reads the batch.
			if i+batch.HeaderSize > n || buf[i+16] != batch.Magic || !sc.plausible(buf[i:n], from+int64(i)) {
				continue
			}
			ok, err := sc.validAt(from + int64(i))
			if err != nil || ok {
				return from + int64(i), err
			}
		}
	}
	return sc.size, nil
}

// plausible reports whether the header at the start of b, at byte pos,
// could begin a batch that resumes the segment: it parses, fits in the
// file, and its offsets follow the expected one within a segment's reach
// and end by the next segment's base.
func (sc *segScanner) plausible(b []byte, pos int64) bool {
	h, err := batch.ParseHeader(b)
	return err == nil && int64(h.Size()) <= sc.size-pos && h.BaseOffset >= sc.expect &&
		h.BaseOffset-sc.expect < 1<<31 && h.RecordCount <= h.LastOffsetDelta+1 &&
		(sc.limit < 0 || h.NextOffset() <= sc.limit)
}

// validAt reports whether a whole batch that checks starts at pos, with
// a base offset not before the expected one. It reads only that batch.
func (sc *segScanner) validAt(pos int64) (bool, error) {
	var hb [batch.HeaderSize]byte
	if pos+batch.HeaderSize > sc.size {
		return false, nil
	}
	if _, err := sc.f.ReadAt(hb[:], pos); err != nil {
		return false, fmt.Errorf("read %s at byte %d: %w", sc.f.Name(), pos, err)
	}
	if !sc.plausible(hb[:], pos) {
		return false, nil
	}
	h, _ := batch.ParseHeader(hb[:])
	if cap(sc.scratch) < h.Size() {
		sc.scratch = make([]byte, h.Size())
	}
	b := sc.scratch[:h.Size()]
	if _, err := sc.f.ReadAt(b, pos); err != nil {
		return false, fmt.Errorf("read %s at byte %d: %w", sc.f.Name(), pos, err)
	}
	_, err := batch.Check(b)
	return err == nil, nil
}

// mayBeCleaned reports whether the segment file at path, in a partition
// directory, is one the cleaner may have rewritten, so that its records
// may skip offsets (see the package doc's gap rule).
func mayBeCleaned(fsys vfs.FS, path string, base int64) bool {
	dir := filepath.Dir(path)
	format, err := vfs.ReadFile(fsys, filepath.Join(dir, formatFile))
	if err != nil {
		return false
	}
	g, err := readGapRule(fsys, dir, string(format))
	if err != nil {
		return false
	}
	names, err := fsys.ReadDir(dir)
	if err != nil {
		return false
	}
	active := true
	for _, n := range names {
		if b, ok := SegmentBase(n); ok && b > base && strings.HasSuffix(n, ".log") {
			active = false
		}
	}
	return g.inside(base, active)
}
