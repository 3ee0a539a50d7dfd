package batch

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// Run `go test ./batch -run Golden -update` to rewrite the golden files
// and the fuzz seeds after an intended format or codec change.
var update = flag.Bool("update", false, "rewrite testdata golden files and fuzz seeds")

// goldenRecords go into every golden batch: a key, a tombstone, headers,
// and enough repetition for the codecs to find.
func goldenRecords() []Record {
	recs := []Record{
		{Key: []byte("user-1"), Value: []byte(`{"name":"ada","visits":3}`), Timestamp: t0},
		{Key: []byte("user-2"), Value: nil, Timestamp: t0.Add(5)},
		{Key: nil, Value: []byte{}, Timestamp: t0.Add(-5), Headers: []RecordHeader{
			{Key: "trace-id", Value: []byte("4bf92f3577b34da6")}, {Key: "nil", Value: nil},
		}},
	}
	for i := range 8 {
		recs = append(recs, Record{Key: fmt.Appendf(nil, "user-%d", i), Value: bytes.Repeat([]byte("abc"), 20), Timestamp: t0})
	}
	return recs
}

func goldenOptions(c Codec) Options {
	return Options{BaseOffset: 1000, Codec: c, Idempotent: true, ProducerID: 4242, ProducerEpoch: 1, BaseSequence: 17}
}

// The golden batches pin the bytes we write: a change in the format, or in
// a codec library's output, shows up here. Any valid encoding still
// decodes; only Append's exact output is frozen.
func TestGolden(t *testing.T) {
	var d Decoder
	for _, c := range codecs {
		t.Run(c.String(), func(t *testing.T) {
			path := filepath.Join("testdata", c.String()+".batch")
			got, err := Append(nil, goldenRecords(), goldenOptions(c))
			if err != nil {
				t.Fatal(err)
			}
			if *update {
				writeFile(t, path, got)
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("Append output differs from %s (run with -update if intended)", path)
			}
			h, err := d.Validate(want, 0)
			if err != nil {
				t.Fatal(err)
			}
			if h.Codec() != c || h.BaseOffset != 1000 || h.ProducerID != 4242 || h.RecordCount != int32(len(goldenRecords())) {
				t.Errorf("header = %+v", h)
			}
			if diff := diffRecords(decodeAll(t, &d, want), goldenRecords(), 1000); diff != "" {
				t.Error(diff)
			}
		})
	}
}

// corrupt.batch is snappy.batch with one bit flipped in its records; torn.batch
// is cut short, as a crash mid-write leaves a log's tail.
func TestGolden_Corrupt(t *testing.T) {
	good, err := Append(nil, goldenRecords(), goldenOptions(Snappy))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		file string
		make func() []byte
		want error
	}{
		{"corrupt.batch", func() []byte { b := bytes.Clone(good); b[len(b)-20] ^= 0x04; return b }, ErrCorrupt},
		{"torn.batch", func() []byte { return good[:len(good)-7] }, ErrShort},
	}
	var d Decoder
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			path := filepath.Join("testdata", tt.file)
			if *update {
				writeFile(t, path, tt.make())
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := d.Validate(b, 0); !errors.Is(err, tt.want) {
				t.Errorf("Validate: %v, want %v", err, tt.want)
			}
			if _, err := Check(b); !errors.Is(err, tt.want) {
				t.Errorf("Check: %v, want %v", err, tt.want)
			}
		})
	}
}

// TestGolden_FuzzSeeds writes the golden batches as seed corpus entries
// for the fuzz targets when run with -update.
func TestGolden_FuzzSeeds(t *testing.T) {
	if !*update {
		t.Skip("only with -update")
	}
	for _, c := range codecs {
		b, err := Append(nil, goldenRecords()[:4], goldenOptions(c))
		if err != nil {
			t.Fatal(err)
		}
		for _, fuzz := range []string{"FuzzValidate", "FuzzRecords"} {
			entry := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", b)
			writeFile(t, filepath.Join("testdata", "fuzz", fuzz, "seed-"+c.String()), []byte(entry))
		}
	}
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
