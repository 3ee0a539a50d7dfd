package batch

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"testing"
)

// headerBomb is the records section of one record with n empty headers
// (a key of length 0, a null value: two bytes each), whose header count
// claims claimed headers.
func headerBomb(n, claimed int) []byte {
	body := []byte{0}                    // attributes
	body = binary.AppendVarint(body, 0)  // timestamp delta
	body = binary.AppendVarint(body, 0)  // offset delta
	body = binary.AppendVarint(body, -1) // key: null
	body = binary.AppendVarint(body, 1)  // value: one byte
	body = append(body, 'v')             //
	body = binary.AppendVarint(body, int64(claimed))
	for range n {
		body = append(body, 0, 1) // key length 0, value length −1
	}
	rec := binary.AppendVarint(nil, int64(len(body)))
	return append(rec, body...)
}

// amplified is a one-record batch with the given records section,
// compressed with c.
func amplified(t testing.TB, c Codec, records []byte) []byte {
	t.Helper()
	good, err := Append(nil, []Record{{Value: []byte("v")}}, Options{Codec: c})
	if err != nil {
		t.Fatal(err)
	}
	z, err := compress(c, nil, records)
	if err != nil {
		t.Fatal(err)
	}
	return rebuild(good, z)
}

// The cost of validating a batch is bounded by its bytes whatever its
// counts claim, and every header counts against the record size limit.
func TestDecoder_Validate_Amplification(t *testing.T) {
	const limit = 1 << 20
	tests := []struct {
		name    string
		c       Codec
		records []byte
		want    []error
	}{
		{"header count over the bytes left", None, headerBomb(3, 1<<30), []error{ErrInvalidRecord, ErrCorrupt}},
		{"header count one over the bytes left", None, headerBomb(3, 4), []error{ErrInvalidRecord, ErrCorrupt}},
		{"header count under the headers", None, headerBomb(3, 2), []error{ErrInvalidRecord, ErrCorrupt}},
		{"headers over the record limit", None, headerBomb(limit/HeaderOverhead, limit/HeaderOverhead), []error{ErrTooLarge}},
		{"3 million empty headers, zstd", Zstd, headerBomb(3_000_000, 3_000_000), []error{ErrTooLarge}},
		{"header count over the bytes left, zstd", Zstd, headerBomb(10, 31_000_000), []error{ErrInvalidRecord}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := amplified(t, tt.c, tt.records)
			var d Decoder
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := d.Validate(b, limit)
			runtime.ReadMemStats(&after)
			t.Logf("%d-byte batch: %v", len(b), err)
			for _, w := range tt.want {
				if !errors.Is(err, w) {
					t.Errorf("err = %v, want %v", err, w)
				}
			}
			// Validation keeps no headers: what it allocates is the
			// decompressed bytes, not 40 bytes per claimed header.
			if grew := after.TotalAlloc - before.TotalAlloc; grew > uint64(4*len(tt.records))+1<<20 {
				t.Errorf("validating allocated %d bytes for %d bytes of records", grew, len(tt.records))
			}
		})
	}
	t.Run("within the limit", func(t *testing.T) {
		n := (limit - 1) / HeaderOverhead // the value's byte and every header's overhead
		b := amplified(t, Zstd, headerBomb(n, n))
		var d Decoder
		if _, err := d.Validate(b, limit); err != nil {
			t.Fatalf("%d empty headers in a 1 MiB limit: %v", n, err)
		}
		for rec, err := range d.Records(b) {
			if err != nil {
				t.Fatal(err)
			}
			if len(rec.Headers) != n || RecordSize(&rec) != 1+n*HeaderOverhead {
				t.Fatalf("%d headers, size %d; want %d headers", len(rec.Headers), RecordSize(&rec), n)
			}
		}
	})
}

// A record count the bytes cannot hold fails before any record is read,
// in every reader.
func TestDecoder_RecordCountOverBytes(t *testing.T) {
	good, err := Append(nil, []Record{{Value: []byte("v")}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	b := append([]byte(nil), good...)
	binary.BigEndian.PutUint32(b[offRecordCount:], 1<<30)
	binary.BigEndian.PutUint32(b[offLastOffsetDelta:], 1<<30-1)
	fixCRC(b)
	check := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, ErrInvalidRecord) || !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: err = %v, want ErrInvalidRecord and ErrCorrupt", what, err)
		}
	}
	var d Decoder
	_, err = d.Validate(b, 0)
	check("Validate", err)
	var recErr error
	for _, err := range d.Records(b) {
		recErr = err
	}
	check("Records", recErr)
	var rawErr error
	for _, err := range d.RawRecords(b) {
		rawErr = err
	}
	check("RawRecords", rawErr)
	var c Cursor
	check("Cursor.Reset", c.Reset(b))
	if _, ok := c.Next(); ok {
		t.Error("Cursor.Next yields a record after a failed Reset")
	}
}

func TestRecordSize(t *testing.T) {
	tests := []struct {
		r    Record
		want int
	}{
		{Record{}, 0},
		{Record{Key: []byte("k"), Value: []byte("vv")}, 3},
		{Record{Headers: []RecordHeader{{}, {}}}, 2 * HeaderOverhead},
		{Record{Value: []byte("v"), Headers: []RecordHeader{{Key: "ab", Value: []byte("c")}}}, 1 + 3 + HeaderOverhead},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.want), func(t *testing.T) {
			if got := RecordSize(&tt.r); got != tt.want {
				t.Errorf("RecordSize = %d, want %d", got, tt.want)
			}
		})
	}
}
