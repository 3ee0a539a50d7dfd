package batch

import (
	"encoding/binary"
	"fmt"
)

// Validate checks a batch completely, as a broker must before storing a
// batch it received: the header, the CRC, and every record, whose offset
// deltas must run 0, 1, 2, … and agree with the header's record count and
// last offset delta. b must be exactly one batch. maxRecord, when > 0,
// limits each record's size as RecordSize counts it (headers included);
// a record over it is ErrTooLarge. The cost is bounded by len(b) and the
// decompressed size whatever the counts in the batch claim: a record or
// header count the bytes cannot hold is ErrInvalidRecord (and ErrCorrupt)
// before anything is allocated for it. It returns the header.
func (d *Decoder) Validate(b []byte, maxRecord int) (Header, error) {
	return d.validate(b, maxRecord, false)
}

// ValidateKeyed is Validate for a compacted log, which keeps the newest
// record of each key and so cannot take a record without one: such a
// record fails with ErrNoKey.
func (d *Decoder) ValidateKeyed(b []byte, maxRecord int) (Header, error) {
	return d.validate(b, maxRecord, true)
}

// validate checks the header and the CRC, decompresses the records (the
// one allocation, kept in the Decoder for the next batch), and scans
// them in one pass with scanRecord: nothing is built, only lengths and
// varints are followed. It accepts and refuses exactly what decoding
// every record with Records would (decodeRecord's checks, in its
// order, with its errors: validate_reference_test.go keeps that path as
// the oracle the tests and FuzzValidate compare with).
func (d *Decoder) validate(b []byte, maxRecord int, keyed bool) (Header, error) {
	h, err := Check(b)
	if err != nil {
		return h, err
	}
	if h.Size() != len(b) {
		return h, fmt.Errorf("%w: length field says %d bytes, got %d", ErrCorrupt, h.Size(), len(b))
	}
	if h.RecordCount == 0 {
		return h, ErrEmpty
	}
	if h.LastOffsetDelta != h.RecordCount-1 {
		return h, fmt.Errorf("%w: last offset delta %d with %d records", ErrCorrupt, h.LastOffsetDelta, h.RecordCount)
	}
	d.minMs, d.maxMs = h.MaxTimestamp, h.MaxTimestamp
	// A broker keeps one Decoder per partition: one large batch must not
	// pin its decompressed bytes for good.
	defer func() {
		if cap(d.raw) > keepScratch {
			d.raw = nil
		}
	}()
	_, data, err := d.body(b)
	if err != nil {
		return h, err
	}
	s := scan{maxRecord: int64(maxRecord), keyed: keyed, logAppendTime: h.Attributes&AttrLogAppendTime != 0,
		baseMs: h.BaseTimestamp, maxTimestamp: h.MaxTimestamp, minMs: d.minMs, maxMs: d.maxMs}
	for i := int32(0); i < h.RecordCount; i++ {
		n, err := s.record(data, i)
		if err != nil {
			if err == errOffsetDelta {
				return h, fmt.Errorf("%w: record offset delta %d, want %d", ErrCorrupt, s.offDelta, i)
			}
			if err == ErrNoKey {
				return h, fmt.Errorf("%w: record %d", ErrNoKey, i)
			}
			return h, recordError(err, i, h.BaseOffset)
		}
		data = data[n:]
	}
	if len(data) != 0 {
		return h, trailingError(len(data), h.BaseOffset)
	}
	d.minMs, d.maxMs = s.minMs, s.maxMs
	return h, nil
}

// errOffsetDelta reports a record whose offset delta is not its index
// (validate says which); it is never returned as is.
const errOffsetDelta = decodeError("offset delta out of sequence")

// scan is what validate carries from record to record.
type scan struct {
	maxRecord     int64 // 0: no limit
	keyed         bool
	logAppendTime bool
	baseMs        int64
	maxTimestamp  int64
	minMs, maxMs  int64 // the timestamps seen so far
	offDelta      int64 // of the last record scanned
}

// uvarint is binary.Uvarint for the caller's slow path: the one- and
// two-byte cases are written out where it is called, since a function
// doing them would not be inlined.
func uvarint(b []byte) (uint64, int) { return binary.Uvarint(b) }

// zigzag turns an unsigned varint into the signed value it encodes, as
// binary.Varint does.
func zigzag(u uint64) int64 { return int64(u>>1) ^ -int64(u&1) }

// record checks record i at the start of data, as decodeRecord decodes
// it — the same checks in the same order, with the same errors — and
// then as validate checks each decoded record: its offset delta
// (errOffsetDelta), its key on a compacted log (ErrNoKey), its
// timestamp folded into minMs and maxMs. It returns the record's encoded
// size. Each varint is read by the same lines: the one- and two-byte
// cases (values up to 8,191) written out, binary.Uvarint for the rest.
func (s *scan) record(data []byte, i int32) (int, error) {
	var u uint64
	var n int
	if len(data) > 0 && data[0] < 0x80 {
		u, n = uint64(data[0]), 1
	} else if len(data) > 1 && data[1] < 0x80 {
		u, n = uint64(data[0]&0x7f)|uint64(data[1])<<7, 2
	} else if u, n = uvarint(data); n <= 0 {
		return 0, errVarint
	}
	size := zigzag(u)
	if size < 0 {
		return 0, errVarint
	}
	if size > int64(len(data)-n) {
		return 0, errOverflow
	}
	total := n + int(size)
	body := data[n:total]
	if len(body) < 1 {
		return 0, errLength
	}
	body = body[1:] // attributes
	if len(body) > 0 && body[0] < 0x80 {
		u, n = uint64(body[0]), 1
	} else if len(body) > 1 && body[1] < 0x80 {
		u, n = uint64(body[0]&0x7f)|uint64(body[1])<<7, 2
	} else if u, n = uvarint(body); n <= 0 {
		return 0, errVarint
	}
	tsDelta := zigzag(u)
	body = body[n:]
	if len(body) > 0 && body[0] < 0x80 {
		u, n = uint64(body[0]), 1
	} else if len(body) > 1 && body[1] < 0x80 {
		u, n = uint64(body[0]&0x7f)|uint64(body[1])<<7, 2
	} else if u, n = uvarint(body); n <= 0 {
		return 0, errVarint
	}
	offDelta := zigzag(u)
	body = body[n:]
	// The key and the value: a length (−1 = nil) and its bytes.
	var lens [2]int64
	for j := range lens {
		if len(body) > 0 && body[0] < 0x80 {
			u, n = uint64(body[0]), 1
		} else if len(body) > 1 && body[1] < 0x80 {
			u, n = uint64(body[0]&0x7f)|uint64(body[1])<<7, 2
		} else if u, n = uvarint(body); n <= 0 {
			return 0, errVarint
		}
		l := zigzag(u)
		body = body[n:]
		if l < -1 || l > int64(len(body)) {
			return 0, errLength
		}
		lens[j] = l
		body = body[max(l, 0):]
	}
	keyLen := lens[0]
	if len(body) > 0 && body[0] < 0x80 {
		u, n = uint64(body[0]), 1
	} else if u, n = uvarint(body); n <= 0 {
		return 0, errVarint
	}
	count := zigzag(u)
	if count < 0 {
		return 0, errVarint
	}
	body = body[n:]
	// Every header takes at least HeaderOverhead bytes: a count the bytes
	// left cannot hold is invalid.
	if count > int64(len(body)/HeaderOverhead) {
		return 0, errHeaderCount
	}
	kv := max(lens[0], 0) + max(lens[1], 0)
	size = kv + HeaderOverhead*count // RecordSize, less the headers' bytes
	if s.maxRecord > 0 && size > s.maxRecord {
		return 0, fmt.Errorf("%w: %d headers and %d bytes of key and value, over the limit of %d bytes", ErrTooLarge, count, kv, s.maxRecord)
	}
	for range count {
		// The header's key: a length (not −1) and its bytes.
		if len(body) > 0 && body[0] < 0x80 {
			u, n = uint64(body[0]), 1
		} else if u, n = uvarint(body); n <= 0 {
			return 0, errLength
		}
		klen := zigzag(u)
		if klen < 0 || klen > int64(len(body)-n) {
			return 0, errLength
		}
		body = body[n+int(klen):]
		// Its value: a length (−1 = nil) and its bytes.
		if len(body) > 0 && body[0] < 0x80 {
			u, n = uint64(body[0]), 1
		} else if u, n = uvarint(body); n <= 0 {
			return 0, errVarint
		}
		vlen := zigzag(u)
		body = body[n:]
		if vlen < -1 || vlen > int64(len(body)) {
			return 0, errLength
		}
		body = body[max(vlen, 0):]
		size += klen + max(vlen, 0)
	}
	if len(body) != 0 {
		return 0, errLength
	}
	if s.maxRecord > 0 && size > s.maxRecord {
		return 0, fmt.Errorf("%w: %d bytes of key, value and headers, limit %d", ErrTooLarge, size, s.maxRecord)
	}
	s.offDelta = offDelta
	if offDelta != int64(i) {
		return 0, errOffsetDelta
	}
	ms := s.baseMs + tsDelta
	if s.logAppendTime {
		ms = s.maxTimestamp
	}
	s.minMs, s.maxMs = min(s.minMs, ms), max(s.maxMs, ms)
	if s.keyed && keyLen < 0 {
		return 0, ErrNoKey
	}
	return total, nil
}
