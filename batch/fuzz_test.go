package batch

import (
	"errors"
	"testing"
)

// Run with, for example:
//
//	go test -run='^$' -fuzz=FuzzValidate -fuzztime=3m -fuzzminimizetime=200x ./batch/
//
// The default 60-second minimization of every new input stalls the fuzzer
// for most of a short run; a cap on it keeps the execs flowing.

// fuzzLimit keeps each fuzz input cheap to decompress.
const fuzzLimit = 1 << 20

// FuzzValidate: Validate never panics, gives the verdict decoding every
// record gives (validateReference: the same error, or the same
// timestamps), and what it accepts re-encodes to a batch that validates
// and decodes to the same records. Seeds are in
// testdata/fuzz/FuzzValidate.
func FuzzValidate(f *testing.F) {
	f.Add([]byte{})
	f.Add(make([]byte, HeaderSize))
	f.Fuzz(func(t *testing.T, b []byte) {
		d := Decoder{MaxDecompressed: fuzzLimit}
		inputs := [][]byte{b}
		// Mutated bytes almost never keep a right CRC: fix the length
		// and the CRC so that the fuzzer reaches the records and codecs.
		if len(b) >= HeaderSize {
			inputs = append(inputs, rebuild(b, b[HeaderSize:]))
		}
		for _, b := range inputs {
			checkValidate(t, &d, b)
			// The same verdict as decoding every record (the reference).
			for _, maxRecord := range []int{0, 8} {
				sameAsReference(t, b, maxRecord, false)
				sameAsReference(t, b, maxRecord, true)
			}
		}
	})
}

func checkValidate(t *testing.T, d *Decoder, b []byte) {
	h, err := d.Validate(b, 0)
	if err != nil {
		if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrShort) && !errors.Is(err, ErrMagic) &&
			!errors.Is(err, ErrCodec) && !errors.Is(err, ErrEmpty) {
			t.Fatalf("Validate: error matches no sentinel: %v", err)
		}
		return
	}
	recs := decodeAll(t, d, b)
	if len(recs) != int(h.RecordCount) {
		t.Fatalf("Validate passed with %d records, header says %d", len(recs), h.RecordCount)
	}
	for _, r := range recs {
		if r.Timestamp.IsZero() {
			return // Append reads a zero time.Time as "now": not representable
		}
	}
	o := Options{
		BaseOffset: h.BaseOffset, Codec: h.Codec(), Idempotent: true,
		ProducerID: h.ProducerID, ProducerEpoch: h.ProducerEpoch, BaseSequence: h.BaseSequence,
	}
	again, err := Append(nil, recs, o)
	if err != nil {
		t.Fatalf("re-encode: %v", err)
	}
	h2, err := d.Validate(again, 0)
	if err != nil {
		t.Fatalf("re-encoded batch: %v", err)
	}
	if h2.BaseOffset != h.BaseOffset || h2.RecordCount != h.RecordCount || h2.Codec() != h.Codec() ||
		h2.ProducerID != h.ProducerID || h2.ProducerEpoch != h.ProducerEpoch || h2.BaseSequence != h.BaseSequence {
		t.Fatalf("re-encoded header %+v, original %+v", h2, h)
	}
	if diff := diffRecords(decodeAll(t, d, again), recs, h.BaseOffset); diff != "" {
		t.Fatalf("re-encoded batch: %s", diff)
	}
}

// FuzzRecords: Records never panics on unchecked bytes, yields an error
// only as its last element, and a reused Decoder decodes the same input
// the same way twice. Seeds are in testdata/fuzz/FuzzRecords.
func FuzzRecords(f *testing.F) {
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		d := Decoder{MaxDecompressed: fuzzLimit}
		first, err1 := collect(t, &d, b)
		second, err2 := collect(t, &d, b)
		if (err1 == nil) != (err2 == nil) || (err1 != nil && err1.Error() != err2.Error()) {
			t.Fatalf("second decode: %v, first: %v", err2, err1)
		}
		if h, err := ParseHeader(b); err == nil && len(first) > int(h.RecordCount) {
			t.Fatalf("%d records, header says %d", len(first), h.RecordCount)
		}
		if len(first) != len(second) {
			t.Fatalf("second decode: %d records, first %d", len(second), len(first))
		}
		for i := range first {
			if first[i].Offset != second[i].Offset {
				t.Fatalf("second decode: record %d at offset %d, first at %d", i, second[i].Offset, first[i].Offset)
			}
			first[i].Offset, second[i].Offset = int64(i), int64(i) // what diffRecords expects
		}
		if diff := diffRecords(second, first, 0); diff != "" {
			t.Fatalf("second decode: %s", diff)
		}
	})
}

// collect decodes b with d, checking that an error ends the iteration.
func collect(t *testing.T, d *Decoder, b []byte) ([]Record, error) {
	var recs []Record
	var last error
	for r, err := range d.Records(b) {
		if last != nil {
			t.Fatalf("element after the error %v", last)
		}
		if err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrShort) && !errors.Is(err, ErrMagic) && !errors.Is(err, ErrCodec) {
				t.Fatalf("error matches no sentinel: %v", err)
			}
			last = err
			continue
		}
		recs = append(recs, r.Clone())
	}
	return recs, last
}
