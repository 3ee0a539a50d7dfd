package batch

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"
)

// filterRecords are records with keys, tombstones, headers and spread
// timestamps, for the filter tests.
func filterRecords() []Record {
	t0 := time.UnixMilli(1_700_000_000_000)
	var rs []Record
	for i := range 9 {
		r := Record{Key: fmt.Appendf(nil, "k%d", i%4), Value: fmt.Appendf(nil, "v%d", i), Timestamp: t0.Add(time.Duration(i*7) * time.Second)}
		switch i {
		case 2:
			r.Value = nil // a tombstone
		case 5:
			r.Key = nil
		case 6:
			r.Headers = []RecordHeader{{Key: "h", Value: []byte("x")}, {Key: "n"}}
		}
		rs = append(rs, r)
	}
	return rs
}

func TestRawRecords_MatchRecords(t *testing.T) {
	for _, codec := range []Codec{None, Gzip, Snappy, LZ4, Zstd} {
		t.Run(codec.String(), func(t *testing.T) {
			b, err := Append(nil, filterRecords(), Options{BaseOffset: 1000, Codec: codec})
			if err != nil {
				t.Fatal(err)
			}
			want := decodeAll(t, &Decoder{}, b)
			var d Decoder
			i := 0
			for raw, err := range d.RawRecords(b) {
				if err != nil {
					t.Fatal(err)
				}
				w := want[i]
				if raw.Offset != w.Offset || !sameBytes(raw.Key, w.Key) || raw.Tombstone != w.Tombstone() {
					t.Fatalf("record %d: offset %d key %q tombstone %t, want %d %q %t", i, raw.Offset, raw.Key, raw.Tombstone, w.Offset, w.Key, w.Tombstone())
				}
				i++
			}
			if i != len(want) {
				t.Fatalf("%d raw records, want %d", i, len(want))
			}
		})
	}
}

// TestAppendFiltered keeps every other record of a batch, in every codec:
// the result checks, spans the same offsets, and decodes to the records
// kept with their offsets, timestamps, keys, values and headers.
func TestAppendFiltered(t *testing.T) {
	for _, codec := range []Codec{None, Gzip, Snappy, LZ4, Zstd} {
		t.Run(codec.String(), func(t *testing.T) {
			recs := filterRecords()
			src, err := Append(nil, recs, Options{BaseOffset: 1000, Codec: codec, Idempotent: true, ProducerID: 7, ProducerEpoch: 2, BaseSequence: 40})
			if err != nil {
				t.Fatal(err)
			}
			var d Decoder
			var kept []byte
			var want []Record
			n := 0
			for raw, err := range d.RawRecords(src) {
				if err != nil {
					t.Fatal(err)
				}
				if (raw.Offset-1000)%2 == 1 {
					kept = append(kept, raw.Raw...)
					want = append(want, recs[raw.Offset-1000])
					n++
				}
			}
			out, err := AppendFiltered([]byte("prefix"), src, kept, n)
			if err != nil {
				t.Fatal(err)
			}
			if string(out[:6]) != "prefix" {
				t.Fatal("AppendFiltered did not append")
			}
			out = out[6:]
			h, err := Check(out)
			if err != nil || h.Size() != len(out) {
				t.Fatalf("Check: %v (size %d of %d)", err, h.Size(), len(out))
			}
			hs, _ := ParseHeader(src)
			if h.BaseOffset != hs.BaseOffset || h.LastOffsetDelta != hs.LastOffsetDelta || h.BaseTimestamp != hs.BaseTimestamp ||
				h.MaxTimestamp != hs.MaxTimestamp || h.ProducerID != 7 || h.ProducerEpoch != 2 || h.BaseSequence != 40 ||
				h.Codec() != codec || h.RecordCount != int32(n) {
				t.Fatalf("filtered header %+v, source %+v", h, hs)
			}
			got := decodeAll(t, &d, out)
			if len(got) != len(want) {
				t.Fatalf("%d records, want %d", len(got), len(want))
			}
			for i, g := range got {
				w := want[i]
				if g.Offset != 1001+2*int64(i) || g.Timestamp.UnixMilli() != w.Timestamp.UnixMilli() ||
					!sameBytes(g.Key, w.Key) || !sameBytes(g.Value, w.Value) || len(g.Headers) != len(w.Headers) {
					t.Fatalf("record %d: %+v, want %+v at offset %d", i, g, w, 1001+2*i)
				}
			}
			// Validate, for producer input, refuses offset gaps.
			if _, err := d.Validate(out, 0); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Validate(filtered) = %v, want ErrCorrupt", err)
			}
		})
	}
}

func TestAppendEmpty(t *testing.T) {
	b := AppendEmpty(nil, 500, 612, 1_700_000_000_123)
	h, err := Check(b)
	if err != nil || h.Size() != len(b) || len(b) != HeaderSize {
		t.Fatalf("Check: %+v, %v (%d bytes)", h, err, len(b))
	}
	if h.BaseOffset != 500 || h.LastOffset() != 612 || h.RecordCount != 0 || h.MaxTimestamp != 1_700_000_000_123 || h.ProducerID != -1 {
		t.Fatalf("header %+v", h)
	}
	for _, err := range Records(b) {
		t.Fatalf("an empty batch yields %v", err)
	}
	var c Cursor
	if err := c.Reset(b); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Next(); ok || c.Err() != nil {
		t.Fatalf("cursor over an empty batch: ok %t, err %v", ok, c.Err())
	}
}

func TestValidateKeyed(t *testing.T) {
	var d Decoder
	keyed, _ := Append(nil, []Record{{Key: []byte("a"), Value: []byte("1")}, {Key: []byte("b")}}, Options{})
	if _, err := d.ValidateKeyed(keyed, 0); err != nil {
		t.Fatalf("ValidateKeyed(keyed) = %v", err)
	}
	mixed, _ := Append(nil, []Record{{Key: []byte("a"), Value: []byte("1")}, {Value: []byte("2")}}, Options{})
	if _, err := d.ValidateKeyed(mixed, 0); !errors.Is(err, ErrNoKey) {
		t.Fatalf("ValidateKeyed(keyless) = %v, want ErrNoKey", err)
	}
	if _, err := d.Validate(mixed, 0); err != nil {
		t.Fatalf("Validate(keyless) = %v", err)
	}
}

// FuzzRawRecords: RawRecords never panics, and where Records decodes a
// batch it agrees with it on every record's offset, key and tombstone.
func FuzzRawRecords(f *testing.F) {
	for _, codec := range []Codec{None, Gzip, Snappy} {
		b, _ := Append(nil, filterRecords(), Options{Codec: codec})
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) >= HeaderSize {
			b = rebuild(b, b[HeaderSize:])
		}
		d := Decoder{MaxDecompressed: fuzzLimit}
		var raws []RawRecord
		var rawErr error
		for r, err := range d.RawRecords(b) {
			if err != nil {
				rawErr = err
				break
			}
			r.Key, r.Raw = bytes.Clone(r.Key), nil
			raws = append(raws, r)
		}
		recs, err := collect(t, &d, b)
		if err != nil {
			return // Records checks more (headers, the value's bytes)
		}
		if rawErr != nil || len(raws) != len(recs) {
			t.Fatalf("RawRecords: %d records, %v; Records: %d", len(raws), rawErr, len(recs))
		}
		for i, r := range recs {
			if raws[i].Offset != r.Offset || !sameBytes(raws[i].Key, r.Key) || raws[i].Tombstone != r.Tombstone() {
				t.Fatalf("record %d: raw %+v, decoded %+v", i, raws[i], r)
			}
		}
	})
}
