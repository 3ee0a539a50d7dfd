package offsets

import (
	"encoding/binary"
	"math"

	"github.com/passbook-log/passbook/vfs"
)

// scanOffsetPages reads committed offsets straight from the pages of an
// offset store that SQL cannot walk (a truncated file, a damaged interior
// page): every cell of every b-tree leaf page of the file and of its WAL
// that decodes as a row of passbook_offsets and holds its checksum. A key
// found more than once keeps the row committed last (updated_ms): a freed
// page may still hold an older row.
func scanOffsetPages(fsys vfs.FS, path string) map[Key]pageRow {
	rows := map[Key]pageRow{}
	b, err := vfs.ReadFile(fsys, path)
	if err != nil || len(b) < 100 {
		return rows
	}
	size := int(binary.BigEndian.Uint16(b[16:18]))
	if size == 1 {
		size = 65536
	}
	if size < 512 || size&(size-1) != 0 {
		return rows
	}
	reserved := int(b[20])
	for off := 0; off+size <= len(b); off += size {
		scanPage(b[off:off+size], off == 0, size-reserved, rows)
	}
	if w, err := vfs.ReadFile(fsys, path+"-wal"); err == nil && len(w) > 32 {
		for off := 32; off+24+size <= len(w); off += 24 + size {
			scanPage(w[off+24:off+24+size], binary.BigEndian.Uint32(w[off:off+4]) == 1, size-reserved, rows)
		}
	}
	return rows
}

// pageRow is a committed offset read from a page.
type pageRow struct {
	Entry
	updatedMs int64
}

func scanPage(p []byte, first bool, usable int, rows map[Key]pageRow) {
	h := 0
	if first {
		h = 100
	}
	if h+8 > len(p) || p[h] != 0x0a { // a leaf page of an index b-tree (WITHOUT ROWID)
		return
	}
	n := int(binary.BigEndian.Uint16(p[h+3 : h+5]))
	maxLocal := (usable-12)*64/255 - 23
	if maxLocal <= 0 {
		return
	}
	for i := range n {
		at := h + 8 + 2*i
		if at+2 > len(p) {
			return
		}
		c := int(binary.BigEndian.Uint16(p[at : at+2]))
		if c >= len(p) {
			continue
		}
		plen, k := varint(p[c:])
		if k == 0 || plen > uint64(maxLocal) || int(plen) > len(p)-c-k {
			continue // overflowing cells are not read
		}
		e, ms, ok := decodeOffsetRow(p[c+k : c+k+int(plen)])
		if !ok {
			continue
		}
		if old, seen := rows[e.Key]; !seen || ms > old.updatedMs {
			rows[e.Key] = pageRow{Entry: e, updatedMs: ms}
		}
	}
}

// decodeOffsetRow decodes a record of passbook_offsets' seven columns
// and checks its checksum.
func decodeOffsetRow(rec []byte) (Entry, int64, bool) {
	hlen, k := varint(rec)
	if k == 0 || hlen > uint64(len(rec)) {
		return Entry{}, 0, false
	}
	var types []uint64
	for pos := k; pos < int(hlen); {
		t, n := varint(rec[pos:int(hlen)])
		if n == 0 {
			return Entry{}, 0, false
		}
		types = append(types, t)
		pos += n
	}
	if len(types) != 7 {
		return Entry{}, 0, false
	}
	vals := make([]any, 7)
	pos := int(hlen)
	for i, t := range types {
		switch {
		case t == 0:
			vals[i] = nil
		case t == 8 || t == 9:
			vals[i] = int64(t - 8)
		case t >= 1 && t <= 6:
			n := []int{0, 1, 2, 3, 4, 6, 8}[t]
			if pos+n > len(rec) {
				return Entry{}, 0, false
			}
			var v int64
			for _, c := range rec[pos : pos+n] {
				v = v<<8 | int64(c)
			}
			if shift := 64 - 8*n; shift > 0 {
				v = v << shift >> shift // sign-extend
			}
			vals[i] = v
			pos += n
		case t >= 13 && t%2 == 1:
			if (t-13)/2 > uint64(len(rec)-pos) {
				return Entry{}, 0, false
			}
			n := int((t - 13) / 2)
			if pos+n > len(rec) {
				return Entry{}, 0, false
			}
			vals[i] = string(rec[pos : pos+n])
			pos += n
		default:
			return Entry{}, 0, false
		}
	}
	consumer, ok1 := vals[0].(string)
	topic, ok2 := vals[1].(string)
	part, ok3 := vals[2].(int64)
	next, ok4 := vals[3].(int64)
	meta, ok5 := vals[4].(string)
	ms, ok6 := vals[5].(int64)
	crc, ok7 := vals[6].(int64)
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6 && ok7) || part < 0 || part > math.MaxInt32 {
		return Entry{}, 0, false
	}
	key := Key{Consumer: consumer, Topic: topic, Partition: int32(part)}
	if checkEntry(key, next, meta, ms, crc, true) != nil {
		return Entry{}, 0, false
	}
	return Entry{Key: key, Offset: next, Metadata: meta}, ms, true
}

// varint reads SQLite's big-endian varint; n is 0 if b is too short.
func varint(b []byte) (v uint64, n int) {
	for i := 0; i < 9 && i < len(b); i++ {
		if i == 8 {
			return v<<8 | uint64(b[i]), 9
		}
		v = v<<7 | uint64(b[i]&0x7f)
		if b[i] < 0x80 {
			return v, i + 1
		}
	}
	return 0, 0
}
