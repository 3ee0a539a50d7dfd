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
		for {
			sb, err := sc.next()
			if err == io.EOF {
				return
			}
			if !yield(sb, err) || err != nil {
				return
			}
		}
	}
}

// recoveryPoint is how many bytes of the segment with base offset base
// CHECKPOINT says were fsync'd: all of a closed or cleanly closed
// segment's, and for the active one the position of its last recorded
// fsync (zero when CHECKPOINT names an older segment).
func recoveryPoint(cp checkpoint, base int64) int64 {
	if cp.base == base {
		return cp.pos
	}
	return 0
}

// tornTail is the one rule, shared by Open (Log.rebuild) and Verify
// (scanOneSegment), that says whether damage found at byte pos of a
// segment is a torn write — bytes a power loss may take — rather than
// corruption. Closed segments were fsync'd whole before the next one was
// created, and the active segment's bytes below its recovery point
// (synced, from CHECKPOINT) were fsync'd: damage there is corruption.
// Bytes past the recovery point were never promised to survive a power
// loss, and the page cache writes them back in any order, so a lost page
// may be followed by later pages that did reach the disk — whole valid
// batches after the damage prove nothing. Damage there is a torn tail:
// the segment ends at pos, and everything after it goes.
func tornTail(active bool, pos, synced int64) bool {
	return active && pos >= synced
}

// segScanner walks a segment file batch by batch, resynchronizing after
// damage.
type segScanner struct {
	f       vfs.File
	size    int64
	br      batchReader
	expect  int64  // base offset the next batch must have
	gaps    bool   // records may skip offsets inside a batch (a cleaned segment)
	jump    bool   // after damage: the next batch may start past expect
	limit   int64  // batches end by this offset (the next segment's base); −1: no limit
	scratch []byte // validAt's buffer
	window  []byte // resync's buffer
	cur     batch.Cursor
}

func (sc *segScanner) reset(f vfs.File, size, base int64) {
	sc.f, sc.size, sc.expect, sc.jump, sc.limit = f, size, base, false, -1
	sc.br.reset(f, 0, size)
}

// next returns the next valid batch or damaged range, or io.EOF at the
// end of the file. An error other than io.EOF is a read error.
func (sc *segScanner) next() (SegmentBatch, error) {
	sb, err := sc.read()
	if err != nil || !sb.Damaged() {
		return sb, err
	}
	// Damage: find where valid batches start again. Offsets are missing
	// there, so the next valid batch may start past the expected one.
	sc.jump = true
	at, rerr := sc.resync(sb.Pos, sb.Header, sb.HeaderOK)
	if rerr != nil {
		return SegmentBatch{}, rerr
	}
	sc.br.reset(sc.f, at, sc.size)
	sb.Size = at - sb.Pos
	return sb, nil
}

// read returns the batch at the scanner's position, checked as next
// checks it, or io.EOF; it does not look past damage (its Size is the
// damaged batch's own, or 0 when its header did not parse). Open's
// recovery (Log.rebuild) and Verify both check batches with it, so that
// they agree on what is damage.
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
	if err == nil {
		if _, err = batch.Check(b); err == nil {
			crcOK = true
			err = sc.check(b, h)
		}
	}
	if err == nil {
		sc.expect, sc.jump = h.NextOffset(), false
		return SegmentBatch{Pos: pos, Size: int64(h.Size()), Header: h, HeaderOK: true, CRCOK: true, Batch: b}, nil
	}
	size := int64(0)
	if headerOK {
		size = int64(max(h.Size(), 0))
	}
	return SegmentBatch{Pos: pos, Size: size, Header: h, HeaderOK: headerOK, CRCOK: crcOK, Err: err}, nil
}

// check verifies a whole batch read at the expected place, its CRC
// already checked: the fields outside the CRC, offsets, record count and
// every record.
func (sc *segScanner) check(b []byte, h batch.Header) error {
	if err := checkFraming(h); err != nil {
		return err
	}
	switch {
	case h.BaseOffset < sc.expect || h.BaseOffset > sc.expect && !sc.jump:
		return fmt.Errorf("%w: batch has base offset %d, want %d", ErrCorrupt, h.BaseOffset, sc.expect)
	case h.RecordCount < 1 && !sc.gaps:
		return fmt.Errorf("%w: batch has no records", ErrCorrupt)
	case h.LastOffsetDelta != h.RecordCount-1 && !sc.gaps, h.RecordCount > h.LastOffsetDelta+1:
		return fmt.Errorf("%w: batch has %d records and last offset delta %d", ErrCorrupt, h.RecordCount, h.LastOffsetDelta)
	}
	if sc.limit >= 0 && h.NextOffset() > sc.limit {
		return fmt.Errorf("%w: batch runs to offset %d, past the next segment's base %d", ErrCorrupt, h.LastOffset(), sc.limit)
	}
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
	format, err := readFile(fsys, filepath.Join(dir, formatFile))
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
