package batch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"
	"time"
)

// validateReference is Validate as it was before the single-pass scan of
// validate.go: the records decoded one by one, each into a Record (its
// headers checked, not kept), through the iterator Records used. It is
// kept as the oracle that FuzzValidate and TestDecoder_Validate_AsReference
// compare Validate with — the same verdict, the same error, the same
// timestamps — and as the baseline of BenchmarkValidate.
func (d *Decoder) validateReference(b []byte, maxRecord int, keyed bool) (Header, error) {
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
	want := h.BaseOffset
	d.minMs, d.maxMs = h.MaxTimestamp, h.MaxTimestamp
	defer func() {
		if cap(d.raw) > keepScratch {
			d.raw = nil
		}
	}()
	records := func(yield func(Record, error) bool) {
		h, data, err := d.body(b)
		if err != nil {
			yield(Record{}, err)
			return
		}
		var rec Record
		for i := int32(0); i < h.RecordCount; i++ {
			n, err := decodeRecordReference(&rec, data, &h, maxRecord)
			if err != nil {
				yield(Record{}, recordError(err, i, h.BaseOffset))
				return
			}
			data = data[n:]
			if !yield(rec, nil) {
				return
			}
		}
		if len(data) != 0 {
			yield(Record{}, trailingError(len(data), h.BaseOffset))
		}
	}
	for rec, err := range records {
		if err != nil {
			return h, err
		}
		if rec.Offset != want {
			return h, fmt.Errorf("%w: record offset delta %d, want %d", ErrCorrupt, rec.Offset-h.BaseOffset, want-h.BaseOffset)
		}
		ms := rec.Timestamp.UnixMilli()
		d.minMs, d.maxMs = min(d.minMs, ms), max(d.maxMs, ms)
		if keyed && rec.Key == nil {
			return h, fmt.Errorf("%w: record %d", ErrNoKey, want-h.BaseOffset)
		}
		want++
	}
	return h, nil
}

// decodeRecordReference is decodeRecord as validateReference used it:
// with a record size limit, and headers checked but not kept.
func decodeRecordReference(rec *Record, data []byte, h *Header, maxRecord int) (int, error) {
	size, n := binary.Varint(data)
	if n <= 0 || size < 0 {
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
	tsDelta, n := binary.Varint(body)
	if n <= 0 {
		return 0, errVarint
	}
	body = body[n:]
	offDelta, n := binary.Varint(body)
	if n <= 0 {
		return 0, errVarint
	}
	body = body[n:]
	var err error
	if rec.Key, body, err = readBytes(body); err != nil {
		return 0, err
	}
	if rec.Value, body, err = readBytes(body); err != nil {
		return 0, err
	}
	count, n := binary.Varint(body)
	if n <= 0 || count < 0 {
		return 0, errVarint
	}
	body = body[n:]
	if count > int64(len(body)/HeaderOverhead) {
		return 0, errHeaderCount
	}
	size = int64(len(rec.Key)+len(rec.Value)) + HeaderOverhead*count
	if maxRecord > 0 && size > int64(maxRecord) {
		return 0, fmt.Errorf("%w: %d headers and %d bytes of key and value, over the limit of %d bytes", ErrTooLarge, count, len(rec.Key)+len(rec.Value), maxRecord)
	}
	rec.Headers = nil
	for range count {
		klen, n := binary.Varint(body)
		if n <= 0 || klen < 0 || klen > int64(len(body)-n) {
			return 0, errLength
		}
		key := body[n : n+int(klen)]
		body = body[n+int(klen):]
		var val []byte
		if val, body, err = readBytes(body); err != nil {
			return 0, err
		}
		size += int64(len(key) + len(val))
	}
	if len(body) != 0 {
		return 0, errLength
	}
	if maxRecord > 0 && size > int64(maxRecord) {
		return 0, fmt.Errorf("%w: %d bytes of key, value and headers, limit %d", ErrTooLarge, size, maxRecord)
	}
	rec.Offset = h.BaseOffset + offDelta
	ms := h.BaseTimestamp + tsDelta
	if h.Attributes&AttrLogAppendTime != 0 {
		ms = h.MaxTimestamp
	}
	rec.Timestamp = time.UnixMilli(ms)
	return total, nil
}

// sameAsReference checks that Validate (or ValidateKeyed) and
// validateReference give b the same verdict: the same header, the same
// error text, and for an accepted batch the same timestamps.
func sameAsReference(t *testing.T, b []byte, maxRecord int, keyed bool) {
	t.Helper()
	d := Decoder{MaxDecompressed: fuzzLimit}
	ref := Decoder{MaxDecompressed: fuzzLimit}
	h, err := d.validate(b, maxRecord, keyed)
	rh, rerr := ref.validateReference(b, maxRecord, keyed)
	if fmt.Sprint(err) != fmt.Sprint(rerr) || h != rh {
		t.Fatalf("maxRecord %d, keyed %v: Validate says %v (header %+v), the reference %v (header %+v)", maxRecord, keyed, err, h, rerr, rh)
	}
	if err != nil {
		if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrShort) && !errors.Is(err, ErrMagic) &&
			!errors.Is(err, ErrCodec) && !errors.Is(err, ErrEmpty) && !errors.Is(err, ErrTooLarge) && !errors.Is(err, ErrNoKey) {
			t.Fatalf("error matches no sentinel: %v", err)
		}
		return
	}
	oldest, newest := d.Timestamps()
	rOldest, rNewest := ref.Timestamps()
	if oldest != rOldest || newest != rNewest {
		t.Fatalf("timestamps %d–%d, the reference %d–%d", oldest, newest, rOldest, rNewest)
	}
}

// Validate accepts and refuses what decoding every record would, with
// the same errors: every record set, every codec, LogAppendTime, and
// every byte of each uncompressed batch's records flipped three ways
// (the CRC fixed, so that the records are what is checked), with and
// without a record size limit, on plain and compacted logs.
func TestDecoder_Validate_AsReference(t *testing.T) {
	for _, set := range recordSets() {
		for _, c := range codecs {
			b, err := Append(nil, set.recs, Options{BaseOffset: 7, Codec: c})
			if err != nil {
				t.Fatal(err)
			}
			lat := append([]byte(nil), b...)
			SetLogAppendTime(lat, t0.Add(time.Hour))
			for _, b := range [][]byte{b, lat} {
				for _, maxRecord := range []int{0, 1, 40, 1 << 20} {
					sameAsReference(t, b, maxRecord, false)
					sameAsReference(t, b, maxRecord, true)
				}
			}
			if c != None || len(set.recs) > 10 {
				continue
			}
			for i := HeaderSize; i < len(b); i++ {
				for _, flip := range []byte{0x01, 0x80, 0xff} {
					m := append([]byte(nil), b...)
					m[i] ^= flip
					m = rebuild(m, m[HeaderSize:])
					sameAsReference(t, m, 0, false)
					sameAsReference(t, m, 3, true)
				}
			}
		}
	}
}

// Varints of every width, minimal or not, and lengths at the edges of
// the one- and two-byte forms, get the same verdict from both.
func TestDecoder_Validate_AsReference_Varints(t *testing.T) {
	// record encodes one record from its fields, each varint written
	// with pad extra continuation bytes (a non-minimal encoding).
	record := func(pad int, tsDelta, offDelta int64, key, value []byte, headers ...[]byte) []byte {
		v := func(dst []byte, x int64) []byte {
			u := uint64(x<<1) ^ uint64(x>>63)
			for range pad {
				dst = append(dst, byte(u)|0x80)
				u >>= 7
			}
			return binary.AppendUvarint(dst, u)
		}
		bytesField := func(dst, b []byte) []byte {
			if b == nil {
				return v(dst, -1)
			}
			return append(v(dst, int64(len(b))), b...)
		}
		body := v([]byte{0}, tsDelta)
		body = v(body, offDelta)
		body = bytesField(body, key)
		body = bytesField(body, value)
		body = v(body, int64(len(headers)/2))
		for _, h := range headers {
			body = bytesField(body, h)
		}
		return append(v(nil, int64(len(body))), body...)
	}
	head, err := Append(nil, []Record{{Value: []byte("x"), Timestamp: t0}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	batchOf := func(recs ...[]byte) []byte {
		b := append([]byte(nil), head[:HeaderSize]...)
		binary.BigEndian.PutUint32(b[offRecordCount:], uint32(len(recs)))
		binary.BigEndian.PutUint32(b[offLastOffsetDelta:], uint32(len(recs)-1))
		var body []byte
		for _, r := range recs {
			body = append(body, r...)
		}
		return rebuild(b, body)
	}
	for _, pad := range []int{0, 1, 2, 9} {
		for _, n := range []int{0, 1, 63, 64, 65, 127, 128, 8191, 8192, 8193, 20000} {
			val := bytes.Repeat([]byte{'v'}, n)
			for _, b := range [][]byte{
				batchOf(record(pad, 0, 0, nil, val)),
				batchOf(record(pad, -1, 0, []byte("k"), val), record(pad, 1<<40, 1, val, nil)),
				batchOf(record(pad, 5, 0, nil, nil, []byte("h"), val, val, nil)),
				batchOf(record(pad, -(1 << 62), 0, val, val, nil, val)),
				batchOf(record(pad, 0, 1, nil, val)),
				batchOf(record(pad, 0, int64(n), nil, val)),
			} {
				for _, maxRecord := range []int{0, n, n + 1, 2*n + 3} {
					sameAsReference(t, b, maxRecord, false)
					sameAsReference(t, b, maxRecord, true)
				}
				for cut := HeaderSize; cut < len(b); cut += max(1, (len(b)-HeaderSize)/50) {
					sameAsReference(t, rebuild(b, b[HeaderSize:cut]), 0, false)
				}
			}
		}
	}
	// An 11-byte varint overflows; 10 bytes of 0xff with a final 0x01
	// is the largest; both as the record length and as a field.
	over := append(bytes.Repeat([]byte{0xff}, 10), 0x01)
	for _, raw := range [][]byte{over, append(bytes.Repeat([]byte{0xff}, 9), 0x01), {0x80}, {0xff, 0xff}} {
		sameAsReference(t, batchOf(raw), 0, false)
		rec := record(0, 0, 0, nil, []byte("v"))
		sameAsReference(t, batchOf(append(append(append([]byte{byte(len(rec) + len(raw) - 2)}, 0), raw...), rec[2:]...)), 0, false)
	}
}
