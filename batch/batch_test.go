package batch

import (
	"bytes"
	"errors"
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
