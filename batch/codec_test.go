package batch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"sync"
	"testing"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
)

func TestAppend_RoundTrip_Codecs(t *testing.T) {
	var d Decoder // one Decoder for everything: its codec state is reused
	for _, c := range codecs {
		for _, set := range recordSets() {
			t.Run(c.String()+"/"+set.name, func(t *testing.T) {
				o := Options{BaseOffset: 1 << 40, Codec: c, Idempotent: true, ProducerID: 77, ProducerEpoch: 3, BaseSequence: 9}
				b, err := Append([]byte("prefix"), set.recs, o)
				if err != nil {
					t.Fatal(err)
				}
				b = b[len("prefix"):]
				h, err := d.Validate(b, 0)
				if err != nil {
					t.Fatalf("validate: %v", err)
				}
				minTs, maxTs := set.recs[0].Timestamp.UnixMilli(), set.recs[0].Timestamp.UnixMilli()
				for _, r := range set.recs {
					minTs, maxTs = min(minTs, r.Timestamp.UnixMilli()), max(maxTs, r.Timestamp.UnixMilli())
				}
				n := int32(len(set.recs))
				want := Header{
					BaseOffset: 1 << 40, Length: int32(len(b) - LengthOverhead), Magic: 2,
					CRC: crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)), Attributes: int16(c),
					LastOffsetDelta: n - 1, BaseTimestamp: minTs, MaxTimestamp: maxTs,
					ProducerID: 77, ProducerEpoch: 3, BaseSequence: 9, RecordCount: n,
				}
				if h != want {
					t.Errorf("header = %+v\nwant     %+v", h, want)
				}
				if diff := diffRecords(decodeAll(t, &d, b), set.recs, 1<<40); diff != "" {
					t.Error(diff)
				}
			})
		}
	}
}

func TestAppend_Compresses(t *testing.T) {
	recs := recordSets()[1].recs
	plain, _ := Append(nil, recs, Options{})
	for _, c := range codecs[1:] {
		b, err := Append(nil, recs, Options{Codec: c})
		if err != nil {
			t.Fatal(err)
		}
		if len(b) > len(plain)/3 {
			t.Errorf("%s: %d bytes, uncompressed %d", c, len(b), len(plain))
		}
	}
}

func TestAppend_UnknownCodec(t *testing.T) {
	for _, c := range []Codec{5, 6, 7, 8, -1} {
		b, err := Append([]byte("x"), recordSets()[0].recs, Options{Codec: c})
		if !errors.Is(err, ErrCodec) || string(b) != "x" {
			t.Errorf("codec %d: %q, %v; want x, ErrCodec", c, b, err)
		}
	}
}

// Append compresses on many goroutines at once; run with -race.
func TestAppend_Concurrent(t *testing.T) {
	recs := recordSets()[1].recs
	var wg sync.WaitGroup
	errs := make(chan error, 8*len(codecs))
	for g := range 8 {
		for _, c := range codecs {
			wg.Go(func() {
				var d Decoder
				var buf []byte
				for i := range 5 {
					var err error
					buf, err = Append(buf[:0], recs, Options{Codec: c, BaseOffset: int64(g*100 + i)})
					if err == nil {
						_, err = d.Validate(buf, 0)
					}
					if err != nil {
						errs <- fmt.Errorf("%s: %w", c, err)
						return
					}
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// rebuild replaces the records section of b (after the header) and fixes
// the length and CRC, as a producer would have written it.
func rebuild(b, records []byte) []byte {
	out := append(append([]byte(nil), b[:HeaderSize]...), records...)
	binary.BigEndian.PutUint32(out[offLength:], uint32(len(out)-LengthOverhead))
	binary.BigEndian.PutUint32(out[offCRC:], crc32.Checksum(out[offAttributes:], castagnoli))
	return out
}

// Kafka Java writes xerial-framed snappy; franz-go and librdkafka write
// raw blocks. Both must decode.
func TestDecoder_Snappy_RawAndXerial(t *testing.T) {
	recs := recordSets()[1].recs
	plain, _ := Append(nil, recs, Options{})
	raw := plain[HeaderSize:]
	snap, _ := Append(nil, recs, Options{Codec: Snappy})
	if !bytes.HasPrefix(snap[HeaderSize:], []byte("\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01")) {
		t.Fatalf("Append(Snappy) does not start with the xerial header: % x", snap[HeaderSize:HeaderSize+16])
	}
	var oneBlock []byte // xerial with a single block bigger than ours
	oneBlock = append(oneBlock, snap[HeaderSize:HeaderSize+16]...)
	blk := snappy.Encode(nil, raw)
	oneBlock = binary.BigEndian.AppendUint32(oneBlock, uint32(len(blk)))
	oneBlock = append(oneBlock, blk...)

	tests := []struct {
		name    string
		records []byte
	}{
		{"ours", snap[HeaderSize:]},
		{"raw block", s2.EncodeSnappy(nil, raw)},
		{"xerial one block", oneBlock},
	}
	var d Decoder
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := rebuild(snap, tt.records)
			if _, err := d.Validate(b, 0); err != nil {
				t.Fatal(err)
			}
			if diff := diffRecords(decodeAll(t, &d, b), recs, 0); diff != "" {
				t.Error(diff)
			}
		})
	}
}

func TestDecoder_Snappy_Malformed(t *testing.T) {
	snap, _ := Append(nil, recordSets()[1].recs, Options{Codec: Snappy})
	body := snap[HeaderSize:]
	s2Block := s2.Encode(nil, bytes.Repeat([]byte("abcdefgh"), 100)) // s2 extensions, not snappy
	tests := []struct {
		name    string
		records []byte
	}{
		{"xerial header only", body[:16]},
		{"length past the end", body[:len(body)-1]},
		{"trailing bytes", append(append([]byte(nil), body...), 0, 0)},
		{"zero-length block", append(append([]byte(nil), body[:16]...), 0, 0, 0, 0)},
		{"raw block truncated", s2.EncodeSnappy(nil, bytes.Repeat([]byte("x"), 1000))[:10]},
		{"s2 block", s2Block},
		{"claims 4 GiB", []byte{0xff, 0xff, 0xff, 0xff, 0x0f, 0x00}},
	}
	var d Decoder
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := d.Validate(rebuild(snap, tt.records), 0); !errors.Is(err, ErrCorrupt) {
				t.Errorf("err = %v, want ErrCorrupt", err)
			}
		})
	}
}

// A batch that decompresses past the limit is rejected, whatever its size
// on the wire.
func TestDecoder_DecompressionBomb(t *testing.T) {
	big := []Record{{Value: make([]byte, 1<<20), Timestamp: t0}}
	for _, c := range codecs[1:] {
		t.Run(c.String(), func(t *testing.T) {
			b, err := Append(nil, big, Options{Codec: c})
			if err != nil {
				t.Fatal(err)
			}
			d := Decoder{MaxDecompressed: 512 << 10}
			if _, err := d.Validate(b, 0); !errors.Is(err, ErrCorrupt) || !errors.Is(err, errTooBig) {
				t.Errorf("err = %v, want ErrCorrupt (%v)", err, errTooBig)
			}
			if cap(d.raw) > 1<<20 {
				t.Errorf("decoder grew to %d bytes before giving up", cap(d.raw))
			}
			d.MaxDecompressed = 2 << 20 // the limit may change between batches
			if _, err := d.Validate(b, 0); err != nil {
				t.Errorf("with a higher limit: %v", err)
			}
		})
	}
}

// Streaming zstd writers (Java's) declare neither the size nor a window
// fitted to it: a frame with an 8 MiB window must decode under a smaller
// limit, and the limit must hold on the output, not only on the header.
func TestDecoder_DecompressionBomb_ZstdStream(t *testing.T) {
	plain, _ := Append(nil, []Record{{Value: make([]byte, 1<<20), Timestamp: t0}}, Options{})
	var buf bytes.Buffer
	w, _ := zstd.NewWriter(&buf)
	if _, err := w.Write(plain[HeaderSize:]); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	b := append([]byte(nil), plain[:HeaderSize]...)
	b[offAttributes+1] |= byte(Zstd)
	b = rebuild(b, buf.Bytes())
	d := Decoder{MaxDecompressed: 2 << 20}
	if _, err := d.Validate(b, 0); err != nil {
		t.Fatalf("under the limit: %v", err)
	}
	d.MaxDecompressed = 512 << 10
	if _, err := d.Validate(b, 0); !errors.Is(err, ErrCorrupt) || !errors.Is(err, errTooBig) {
		t.Errorf("err = %v, want ErrCorrupt (%v)", err, errTooBig)
	}
}

// The default limit: a zstd frame of 65 MiB of zeros is a few KiB.
func TestDecoder_DecompressionBomb_Default(t *testing.T) {
	one, _ := Append(nil, []Record{{Value: []byte("v"), Timestamp: t0}}, Options{})
	zeros := make([]byte, DefaultMaxDecompressed+1<<20)
	enc, _ := zstd.NewWriter(nil)
	bomb := rebuild(one, enc.EncodeAll(zeros, nil))
	bomb[offAttributes+1] |= byte(Zstd)
	bomb = rebuild(bomb, bomb[HeaderSize:])
	if len(bomb) > 64<<10 {
		t.Fatalf("bomb is %d bytes", len(bomb))
	}
	var d Decoder
	if _, err := d.Validate(bomb, 0); !errors.Is(err, ErrCorrupt) {
		t.Errorf("err = %v, want ErrCorrupt", err)
	}
}

// Through a reused Decoder, decoding allocates nothing once its buffers
// and codec exist, compressed or not. (Header keys are strings and do
// allocate.)
func TestDecoder_Records_ZeroAllocs(t *testing.T) {
	recs := recordSets()[1].recs
	for _, c := range codecs {
		b, _ := Append(nil, recs, Options{Codec: c})
		var d Decoder
		run := func() {
			for _, err := range d.Records(b) {
				if err != nil {
					t.Fatal(err)
				}
			}
		}
		run() // grows the buffer, makes the codec
		if raceEnabled && c != None {
			continue
		}
		if got := testing.AllocsPerRun(20, run); got != 0 {
			t.Errorf("%s: %v allocs per batch, want 0", c, got)
		}
	}
}

func TestRecords_PooledDecoder(t *testing.T) {
	recs := recordSets()[1].recs
	b, _ := Append(nil, recs, Options{Codec: Zstd})
	for range 3 {
		var got []Record
		for r, err := range Records(b) {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, r.Clone())
			if len(got) == 10 {
				break // breaking out returns the Decoder too
			}
		}
		if diff := diffRecords(got, recs[:10], 0); diff != "" {
			t.Error(diff)
		}
	}
}
