package batch

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestAppend_RoundTrip(t *testing.T) {
	ts := time.UnixMilli(1_700_000_000_123)
	recs := []Record{
		{Key: []byte("k1"), Value: []byte("v1"), Timestamp: ts},
		{Value: []byte(""), Timestamp: ts.Add(time.Second)},
		{Key: []byte("gone"), Value: nil, Timestamp: ts},
		{Value: []byte("h"), Headers: []RecordHeader{{Key: "a", Value: []byte("1")}, {Key: "b", Value: nil}}, Timestamp: ts},
	}
	b, err := Append(nil, recs, Options{BaseOffset: 40})
	if err != nil {
		t.Fatal(err)
	}
	var d Decoder
	h, err := d.Validate(b, 0)
	if err != nil {
		t.Fatal(err)
	}
	if h.RecordCount != 4 || h.BaseOffset != 40 || h.LastOffset() != 43 || h.MaxTimestamp != ts.Add(time.Second).UnixMilli() {
		t.Fatalf("header = %+v", h)
	}
	i := 0
	for r, err := range d.Records(b) {
		if err != nil {
			t.Fatal(err)
		}
		w := recs[i]
		if r.Offset != 40+int64(i) || !bytes.Equal(r.Key, w.Key) || (r.Key == nil) != (w.Key == nil) ||
			!bytes.Equal(r.Value, w.Value) || (r.Value == nil) != (w.Value == nil) || !r.Timestamp.Equal(w.Timestamp) ||
			len(r.Headers) != len(w.Headers) {
			t.Errorf("record %d = %+v, want %+v", i, r, w)
		}
		for j := range w.Headers {
			if r.Headers[j].Key != w.Headers[j].Key || !bytes.Equal(r.Headers[j].Value, w.Headers[j].Value) || (r.Headers[j].Value == nil) != (w.Headers[j].Value == nil) {
				t.Errorf("record %d header %d = %+v, want %+v", i, j, r.Headers[j], w.Headers[j])
			}
		}
		i++
	}
	if i != len(recs) {
		t.Fatalf("got %d records, want %d", i, len(recs))
	}
	SetBaseOffset(b, 1000)
	if _, err := Check(b); err != nil {
		t.Fatalf("after SetBaseOffset: %v", err)
	}
	b[len(b)-1] ^= 0xff
	if _, err := Check(b); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("flipped byte: err = %v, want ErrCorrupt", err)
	}
}

// codecs lists every codec, for tables that run once per codec.
var codecs = []Codec{None, Gzip, Snappy, LZ4, Zstd}

var t0 = time.UnixMilli(1_700_000_000_000)

// recordSets are the record shapes every codec must round-trip.
func recordSets() []struct {
	name string
	recs []Record
} {
	many := make([]Record, 1000)
	for i := range many {
		many[i] = Record{
			Key:       fmt.Appendf(nil, "user-%d", i%37),
			Value:     fmt.Appendf(nil, `{"id":%d,"name":"item %d","tags":["a","b"]}`, i, i*7),
			Timestamp: t0.Add(time.Duration(i%50) * time.Millisecond),
		}
	}
	return []struct {
		name string
		recs []Record
	}{
		{"one", []Record{{Key: []byte("k"), Value: []byte("v"), Timestamp: t0}}},
		{"1000", many},
		{"empty key and value", []Record{
			{Key: []byte{}, Value: []byte{}, Timestamp: t0},
			{Key: nil, Value: []byte{}, Timestamp: t0.Add(-time.Second)},
		}},
		{"tombstones", []Record{
			{Key: []byte("gone"), Value: nil, Timestamp: t0},
			{Key: []byte("here"), Value: []byte("x"), Timestamp: t0},
			{Key: nil, Value: nil, Timestamp: t0},
		}},
		{"headers", []Record{
			{Value: []byte("h"), Timestamp: t0, Headers: []RecordHeader{
				{Key: "a", Value: []byte("1")}, {Key: "", Value: []byte{}}, {Key: "nil", Value: nil},
			}},
			{Value: []byte("no headers"), Timestamp: t0},
			{Value: []byte("h2"), Timestamp: t0, Headers: []RecordHeader{{Key: "trace", Value: bytes.Repeat([]byte{0xab}, 300)}}},
		}},
	}
}

// decodeAll decodes every record of b with d and clones them.
func decodeAll(t testing.TB, d *Decoder, b []byte) []Record {
	t.Helper()
	var out []Record
	for r, err := range d.Records(b) {
		if err != nil {
			t.Fatalf("records: %v", err)
		}
		out = append(out, r.Clone())
	}
	return out
}

// diffRecords describes the first difference between got and want, which
// are compared on what survives encoding: offsets are base+index, and a nil
// slice differs from an empty one.
func diffRecords(got, want []Record, base int64) string {
	if len(got) != len(want) {
		return fmt.Sprintf("got %d records, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		switch {
		case g.Offset != base+int64(i):
			return fmt.Sprintf("record %d: offset %d, want %d", i, g.Offset, base+int64(i))
		case g.Timestamp.UnixMilli() != w.Timestamp.UnixMilli():
			return fmt.Sprintf("record %d: timestamp %d, want %d", i, g.Timestamp.UnixMilli(), w.Timestamp.UnixMilli())
		case !sameBytes(g.Key, w.Key):
			return fmt.Sprintf("record %d: key %q (nil %t), want %q (nil %t)", i, g.Key, g.Key == nil, w.Key, w.Key == nil)
		case !sameBytes(g.Value, w.Value):
			return fmt.Sprintf("record %d: value %q (nil %t), want %q (nil %t)", i, g.Value, g.Value == nil, w.Value, w.Value == nil)
		case len(g.Headers) != len(w.Headers):
			return fmt.Sprintf("record %d: %d headers, want %d", i, len(g.Headers), len(w.Headers))
		}
		for j := range w.Headers {
			if g.Headers[j].Key != w.Headers[j].Key || !sameBytes(g.Headers[j].Value, w.Headers[j].Value) {
				return fmt.Sprintf("record %d header %d: %+v, want %+v", i, j, g.Headers[j], w.Headers[j])
			}
		}
	}
	return ""
}

// sameBytes is bytes.Equal that also tells nil from empty.
func sameBytes(a, b []byte) bool { return bytes.Equal(a, b) && (a == nil) == (b == nil) }

func BenchmarkAppend_1000x100B(b *testing.B) {
	recs := make([]Record, 1000)
	val := bytes.Repeat([]byte("x"), 100)
	for i := range recs {
		recs[i].Value = val
	}
	var buf []byte
	b.SetBytes(100 * 1000)
	for b.Loop() {
		buf, _ = Append(buf[:0], recs, Options{})
	}
	b.ReportMetric(float64(b.N)*1000/b.Elapsed().Seconds(), "records/s")
}

func BenchmarkRecords_1000x100B(b *testing.B) {
	recs := make([]Record, 1000)
	val := bytes.Repeat([]byte("x"), 100)
	for i := range recs {
		recs[i].Value = val
	}
	buf, _ := Append(nil, recs, Options{})
	var d Decoder
	b.ReportAllocs()
	for b.Loop() {
		for r, err := range d.Records(buf) {
			if err != nil || len(r.Value) != 100 {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.N)*1000/b.Elapsed().Seconds(), "records/s")
}

// benchRecords are 1000 records of 100-byte JSON-like values, which
// compress about as well as real payloads do.
func benchRecords() []Record {
	recs := make([]Record, 1000)
	for i := range recs {
		v := fmt.Appendf(nil, `{"user":%d,"event":"page_view","path":"/items/%d","ms":%d}`, i*7919%1000, i*31%977, i%250)
		for len(v) < 100 {
			v = append(v, ' ')
		}
		recs[i] = Record{Key: fmt.Appendf(nil, "user-%d", i*7919%1000), Value: v[:100]}
	}
	return recs
}

func BenchmarkRecords_Codecs_1000x100B(b *testing.B) {
	for _, c := range codecs {
		b.Run(c.String(), func(b *testing.B) {
			buf, err := Append(nil, benchRecords(), Options{Codec: c})
			if err != nil {
				b.Fatal(err)
			}
			var d Decoder
			b.ReportAllocs()
			b.SetBytes(100 * 1000)
			for b.Loop() {
				for r, err := range d.Records(buf) {
					if err != nil || len(r.Value) != 100 {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.N)*1000/b.Elapsed().Seconds(), "records/s")
			b.ReportMetric(float64(len(buf)), "batch-bytes")
		})
	}
}

func BenchmarkAppend_Codecs_1000x100B(b *testing.B) {
	for _, c := range codecs {
		b.Run(c.String(), func(b *testing.B) {
			recs := benchRecords()
			var buf []byte
			b.ReportAllocs()
			b.SetBytes(100 * 1000)
			for b.Loop() {
				buf, _ = Append(buf[:0], recs, Options{Codec: c})
			}
			b.ReportMetric(float64(b.N)*1000/b.Elapsed().Seconds(), "records/s")
		})
	}
}
