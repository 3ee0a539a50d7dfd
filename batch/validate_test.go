package batch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"testing"
	"time"
)

// fixCRC recomputes the CRC of a batch whose length field is right.
func fixCRC(b []byte) []byte {
	size := int(binary.BigEndian.Uint32(b[offLength:])) + LengthOverhead
	binary.BigEndian.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:min(size, len(b))], castagnoli))
	return b
}

func TestDecoder_Validate_Rejects(t *testing.T) {
	recs := recordSets()[3].recs // three records
	good, err := Append(nil, recs, Options{BaseOffset: 10})
	if err != nil {
		t.Fatal(err)
	}
	edit := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	put32 := func(off int, v int32) func([]byte) []byte {
		return func(b []byte) []byte { binary.BigEndian.PutUint32(b[off:], uint32(v)); return b }
	}
	withFix := func(f func([]byte) []byte) func([]byte) []byte {
		return func(b []byte) []byte { return fixCRC(f(b)) }
	}
	n := int32(len(recs))
	length := int32(len(good) - LengthOverhead)
	gapped := kmsgBatchDeltas(t, recs, []int32{0, 2, 3})
	repeated := kmsgBatchDeltas(t, recs, []int32{0, 1, 1})

	tests := []struct {
		name      string
		b         []byte
		maxRecord int
		want      error
	}{
		{"flipped record byte", edit(func(b []byte) []byte { b[len(b)-2] ^= 1; return b }), 0, ErrCorrupt},
		{"flipped crc", edit(func(b []byte) []byte { b[offCRC] ^= 0x80; return b }), 0, ErrCorrupt},
		{"flipped attributes", edit(func(b []byte) []byte { b[offAttributes] ^= 0x10; return b }), 0, ErrCorrupt},
		{"length longer than the bytes", edit(put32(offLength, length+1)), 0, ErrShort},
		{"length shorter than the bytes", edit(put32(offLength, length-1)), 0, ErrCorrupt},
		{"length shorter, crc over the shorter batch", edit(withFix(put32(offLength, length-1))), 0, ErrCorrupt},
		{"length below the header", edit(put32(offLength, 10)), 0, ErrCorrupt},
		{"negative length", edit(put32(offLength, -1)), 0, ErrCorrupt},
		{"bytes after the records", fixCRC(append(edit(put32(offLength, length+1)), 0)), 0, ErrCorrupt},
		{"record count one more", edit(withFix(func(b []byte) []byte {
			return put32(offLastOffsetDelta, n)(put32(offRecordCount, n+1)(b))
		})), 0, ErrCorrupt},
		{"record count one less", edit(withFix(func(b []byte) []byte {
			return put32(offLastOffsetDelta, n-2)(put32(offRecordCount, n-1)(b))
		})), 0, ErrCorrupt},
		{"last offset delta disagrees", edit(withFix(put32(offLastOffsetDelta, n))), 0, ErrCorrupt},
		{"negative record count", edit(withFix(put32(offRecordCount, -1))), 0, ErrCorrupt},
		{"no records", edit(withFix(func(b []byte) []byte {
			return put32(offLength, HeaderSize-LengthOverhead)(put32(offRecordCount, 0)(put32(offLastOffsetDelta, 0)(b)))[:HeaderSize]
		})), 0, ErrEmpty},
		{"offset deltas 0 2 3", gapped, 0, ErrCorrupt},
		{"offset deltas 0 1 1", repeated, 0, ErrCorrupt},
		{"magic 0", edit(func(b []byte) []byte { b[offMagic] = 0; return b }), 0, ErrMagic},
		{"magic 1", edit(func(b []byte) []byte { b[offMagic] = 1; return b }), 0, ErrMagic},
		{"magic 3", edit(func(b []byte) []byte { b[offMagic] = 3; return b }), 0, ErrMagic},
		{"codec 5", edit(withFix(func(b []byte) []byte { b[offAttributes+1] |= 5; return b })), 0, ErrCodec},
		{"codec 6", edit(withFix(func(b []byte) []byte { b[offAttributes+1] |= 6; return b })), 0, ErrCodec},
		{"codec 7", edit(withFix(func(b []byte) []byte { b[offAttributes+1] |= 7; return b })), 0, ErrCodec},
		{"codec gzip, records not gzip", edit(withFix(func(b []byte) []byte { b[offAttributes+1] |= 1; return b })), 0, ErrCorrupt},
		{"record over maxRecord", good, len("here"), ErrTooLarge},
	}
	var d Decoder
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := d.Validate(tt.b, tt.maxRecord)
			t.Log(err)
			if !errors.Is(err, tt.want) {
				t.Errorf("err = %v, want %v", err, tt.want)
			}
		})
	}
	// The unchanged batch passes, with a limit it meets exactly.
	if _, err := d.Validate(good, len("here")+len("x")); err != nil {
		t.Errorf("good batch: %v", err)
	}
}

// kmsgBatchDeltas builds an uncompressed batch whose records carry the
// given offset deltas, with a consistent header and CRC.
func kmsgBatchDeltas(t *testing.T, recs []Record, deltas []int32) []byte {
	b := kmsgBatch(t, recs, 0, None, producers[0].compress)
	var body []byte
	data := b[HeaderSize:]
	var d Decoder
	var h Header
	for i := range recs {
		var r Record
		n, err := d.decodeRecord(&r, data, &h)
		if err != nil {
			t.Fatal(err)
		}
		rec := data[:n]
		// The offset delta follows the length, attributes and
		// timestamp delta; the deltas here are all one varint byte.
		_, ln := binary.Varint(rec)
		_, tn := binary.Varint(rec[ln+1:])
		at := ln + 1 + tn
		rec = append(append(append([]byte(nil), rec[:at]...), byte(deltas[i]<<1)), rec[at+1:]...)
		body = append(body, rec...)
		data = data[n:]
	}
	return rebuild(b, body)
}

// Cutting a batch anywhere gives ErrShort or ErrCorrupt, never a panic,
// whether the length field is left alone or made to fit the cut.
func TestDecoder_Validate_Truncated(t *testing.T) {
	var d Decoder
	for _, c := range codecs {
		good, err := Append(nil, recordSets()[4].recs, Options{Codec: c})
		if err != nil {
			t.Fatal(err)
		}
		for i := range len(good) {
			cut := good[:i]
			if _, err := d.Validate(cut, 0); !errors.Is(err, ErrShort) {
				t.Errorf("%s: cut at %d: err = %v, want ErrShort", c, i, err)
			}
			if i < HeaderSize {
				continue
			}
			fitted := rebuild(good, good[HeaderSize:i])
			if _, err := d.Validate(fitted, 0); !errors.Is(err, ErrCorrupt) {
				t.Errorf("%s: cut at %d, length fitted: err = %v, want ErrCorrupt", c, i, err)
			}
			for _, err := range d.Records(cut) {
				if err != nil && !errors.Is(err, ErrShort) && !errors.Is(err, ErrCorrupt) {
					t.Errorf("%s: cut at %d: Records: %v", c, i, err)
				}
			}
		}
	}
}

func TestRecord_Clone(t *testing.T) {
	recs := recordSets()[4].recs
	b, _ := Append(nil, recs, Options{})
	orig := append([]byte(nil), b...)
	var clones, views []Record
	for r, err := range Records(b) {
		if err != nil {
			t.Fatal(err)
		}
		clones = append(clones, r.Clone())
		views = append(views, r)
	}
	for i := range b {
		b[i] = 0xee // scribble over the batch the views point into
	}
	if diff := diffRecords(clones, recs, 0); diff != "" {
		t.Errorf("clone changed with the batch: %s", diff)
	}
	if bytes.Equal(views[0].Value, recs[0].Value) {
		t.Errorf("the uncloned record did not change: the test proves nothing")
	}
	copy(b, orig)
	clones[0].Value[0] = 'X'
	clones[0].Headers[0].Value[0] = 'Y'
	if !bytes.Equal(b, orig) {
		t.Errorf("writing to a clone changed the batch")
	}
	empty := Record{Key: []byte{}, Headers: []RecordHeader{}}.Clone()
	if empty.Key == nil || empty.Value != nil || empty.Headers == nil {
		t.Errorf("Clone lost nil-ness: %+v", empty)
	}
}

func TestSetLogAppendTime(t *testing.T) {
	at := time.UnixMilli(1_800_000_000_000)
	var d Decoder
	for _, c := range codecs {
		t.Run(c.String(), func(t *testing.T) {
			b, _ := Append(nil, recordSets()[1].recs, Options{Codec: c})
			SetLogAppendTime(b, at)
			h, err := d.Validate(b, 0)
			if err != nil {
				t.Fatal(err)
			}
			if h.Attributes&AttrLogAppendTime == 0 || h.Codec() != c || h.MaxTimestamp != at.UnixMilli() || !h.MaxTime().Equal(at) {
				t.Errorf("header = %+v", h)
			}
			for r, err := range d.Records(b) {
				if err != nil {
					t.Fatal(err)
				}
				if !r.Timestamp.Equal(at) {
					t.Fatalf("record %d: timestamp %v, want %v", r.Offset, r.Timestamp, at)
				}
			}
			SetBaseOffset(b, 99)
			SetLeaderEpoch(b, 5)
			if h, err := Check(b); err != nil || h.BaseOffset != 99 || h.PartitionLeaderEpoch != 5 {
				t.Errorf("after SetBaseOffset, SetLeaderEpoch: %+v, %v", h, err)
			}
		})
	}
}

// TestDecoders_AgreeOnBodies: Records, RawRecords and Cursor reach a
// batch's records the same way (Decoder.body), so they accept the same
// batches and refuse the same ones: an unknown codec (ErrCodec, and for
// the Cursor, which reads stored bytes, ErrCorrupt too), records that do
// not decompress, a record count the bytes cannot hold.
func TestDecoders_AgreeOnBodies(t *testing.T) {
	recs := recordSets()[3].recs
	good, err := Append(nil, recs, Options{BaseOffset: 10})
	if err != nil {
		t.Fatal(err)
	}
	gzipped, err := Append(nil, recs, Options{BaseOffset: 10, Codec: Gzip})
	if err != nil {
		t.Fatal(err)
	}
	edit := func(b []byte, f func(b []byte)) []byte {
		b = append([]byte(nil), b...)
		f(b)
		return fixCRC(b)
	}
	tests := []struct {
		name string
		b    []byte
		want []error // nil: accepted
	}{
		{"plain", good, nil},
		{"gzip", gzipped, nil},
		{"codec 5", edit(good, func(b []byte) { b[offAttributes+1] |= 5 }), []error{ErrCodec}},
		{"codec 7", edit(good, func(b []byte) { b[offAttributes+1] |= 7 }), []error{ErrCodec}},
		{"gzip bytes, no codec", edit(gzipped, func(b []byte) { b[offAttributes+1] &^= 7 }), []error{ErrCorrupt}},
		{"not gzip", edit(good, func(b []byte) { b[offAttributes+1] |= byte(Gzip) }), []error{ErrCorrupt}},
		{"count past the bytes", edit(good, func(b []byte) { binary.BigEndian.PutUint32(b[offRecordCount:], 1<<20) }), []error{ErrCorrupt, ErrInvalidRecord}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var d Decoder
			var errs [3]error
			n := [3]int{}
			for _, err := range d.Records(tt.b) {
				if err != nil {
					errs[0] = err
					break
				}
				n[0]++
			}
			for _, err := range d.RawRecords(tt.b) {
				if err != nil {
					errs[1] = err
					break
				}
				n[1]++
			}
			var c Cursor
			if errs[2] = c.Reset(tt.b); errs[2] == nil {
				for _, ok := c.Next(); ok; _, ok = c.Next() {
					n[2]++
				}
				errs[2] = c.Err()
			}
			for i, name := range []string{"Records", "RawRecords", "Cursor"} {
				if tt.want == nil {
					if errs[i] != nil || n[i] != len(recs) {
						t.Errorf("%s: %d records, %v; want %d", name, n[i], errs[i], len(recs))
					}
					continue
				}
				want := tt.want
				if i == 2 && errors.Is(want[0], ErrCodec) {
					want = append(want, ErrCorrupt)
				}
				for _, w := range want {
					if !errors.Is(errs[i], w) {
						t.Errorf("%s: %v, want %v", name, errs[i], w)
					}
				}
			}
		})
	}
}
