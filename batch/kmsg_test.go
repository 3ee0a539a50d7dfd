package batch

// Cross-checks against franz-go's kmsg, an independent implementation of
// the RecordBatch format: what we write, kmsg reads, and what a franz-go
// producer writes, we read.

import (
	"bytes"
	stdgzip "compress/gzip"
	"encoding/binary"
	"hash/crc32"
	"io"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/snappy/xerial"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var crc32c = crc32.MakeTable(crc32.Castagnoli)

// producers compress a records section the way franz-go's kgo 1.22
// producer does (its DefaultCompressor), plus the Java client's framings
// where they differ.
var producers = []struct {
	name     string
	codec    Codec
	compress func(t testing.TB, src []byte) []byte
}{
	{"none", None, func(_ testing.TB, src []byte) []byte { return src }},
	{"gzip", Gzip, func(t testing.TB, src []byte) []byte {
		var buf bytes.Buffer
		w, _ := gzip.NewWriterLevel(&buf, gzip.DefaultCompression)
		if _, err := w.Write(src); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}},
	// kgo's default produce path: one raw block.
	{"snappy-raw", Snappy, func(_ testing.TB, src []byte) []byte { return s2.EncodeSnappy(nil, src) }},
	// Kafka Java, and kgo with StreamingCompression: xerial framing.
	{"snappy-xerial", Snappy, func(_ testing.TB, src []byte) []byte { return xerial.Encode(nil, src) }},
	// kgo's lz4 writer: library defaults, 4 MiB blocks.
	{"lz4", LZ4, func(t testing.TB, src []byte) []byte { return lz4Frame(t, src) }},
	// Kafka Java's lz4: 64 KiB blocks.
	{"lz4-64k", LZ4, func(t testing.TB, src []byte) []byte { return lz4Frame(t, src, lz4.BlockSizeOption(lz4.Block64Kb)) }},
	{"zstd", Zstd, func(t testing.TB, src []byte) []byte {
		w, err := zstd.NewWriter(nil, zstd.WithWindowSize(64<<10), zstd.WithEncoderConcurrency(1), zstd.WithZeroFrames(true))
		if err != nil {
			t.Fatal(err)
		}
		return w.EncodeAll(src, nil)
	}},
}

func lz4Frame(t testing.TB, src []byte, opts ...lz4.Option) []byte {
	var buf bytes.Buffer
	w := lz4.NewWriter(&buf)
	if err := w.Apply(opts...); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(src); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// kmsgBatch builds a batch of recs with kmsg at baseOffset, its records
// compressed by compress, as a plain (non-idempotent) producer sends it.
func kmsgBatch(t testing.TB, recs []Record, baseOffset int64, codec Codec, compress func(testing.TB, []byte) []byte) []byte {
	baseMs, maxMs := recs[0].Timestamp.UnixMilli(), recs[0].Timestamp.UnixMilli()
	for _, r := range recs {
		baseMs, maxMs = min(baseMs, r.Timestamp.UnixMilli()), max(maxMs, r.Timestamp.UnixMilli())
	}
	var raw []byte
	for i, r := range recs {
		kr := kmsg.Record{
			TimestampDelta64: r.Timestamp.UnixMilli() - baseMs,
			OffsetDelta:      int32(i),
			Key:              r.Key,
			Value:            r.Value,
		}
		for _, h := range r.Headers {
			kr.Headers = append(kr.Headers, kmsg.Header{Key: h.Key, Value: h.Value})
		}
		kr.Length = int32(len(kr.AppendTo(nil)) - 1) // everything after a 1-byte length
		raw = kr.AppendTo(raw)
	}
	body := compress(t, raw)
	rb := kmsg.RecordBatch{
		FirstOffset:     baseOffset,
		Length:          int32(HeaderSize - LengthOverhead + len(body)),
		Magic:           2,
		Attributes:      int16(codec),
		LastOffsetDelta: int32(len(recs) - 1),
		FirstTimestamp:  baseMs,
		MaxTimestamp:    maxMs,
		ProducerID:      -1,
		ProducerEpoch:   -1,
		FirstSequence:   -1,
		NumRecords:      int32(len(recs)),
		Records:         body,
	}
	b := rb.AppendTo(nil)
	rb.CRC = int32(crc32.Checksum(b[21:], crc32c))
	return rb.AppendTo(b[:0])
}

// kmsgRecords reads a batch with kmsg, decompressing it with libraries
// other than the ones (or not the way) compress.go uses them.
func kmsgRecords(t *testing.T, b []byte) (kmsg.RecordBatch, []kmsg.Record) {
	t.Helper()
	var rb kmsg.RecordBatch
	if err := rb.ReadFrom(b); err != nil {
		t.Fatalf("kmsg: %v", err)
	}
	raw, err := referenceDecompress(Codec(rb.Attributes&7), rb.Records)
	if err != nil {
		t.Fatalf("decompress %s: %v", Codec(rb.Attributes&7), err)
	}
	var recs []kmsg.Record
	for len(raw) > 0 {
		l, n := binary.Varint(raw)
		if n <= 0 || int(l) > len(raw)-n {
			t.Fatalf("record %d: bad length", len(recs))
		}
		var r kmsg.Record
		if err := r.ReadFrom(raw[:n+int(l)]); err != nil {
			t.Fatalf("record %d: %v", len(recs), err)
		}
		recs = append(recs, r)
		raw = raw[n+int(l):]
	}
	return rb, recs
}

func referenceDecompress(c Codec, src []byte) ([]byte, error) {
	switch c {
	case Gzip:
		r, err := stdgzip.NewReader(bytes.NewReader(src))
		if err != nil {
			return nil, err
		}
		return io.ReadAll(r)
	case Snappy:
		return xerial.Decode(src)
	case LZ4:
		return io.ReadAll(lz4.NewReader(bytes.NewReader(src)))
	case Zstd:
		r, err := zstd.NewReader(nil)
		if err != nil {
			return nil, err
		}
		defer r.Close()
		return r.DecodeAll(src, nil)
	}
	return src, nil
}

func TestAppend_ReadByKmsg(t *testing.T) {
	for _, c := range codecs {
		for _, set := range recordSets() {
			t.Run(c.String()+"/"+set.name, func(t *testing.T) {
				b, err := Append(nil, set.recs, Options{BaseOffset: 500, Codec: c})
				if err != nil {
					t.Fatal(err)
				}
				rb, krecs := kmsgRecords(t, b)
				if got, want := uint32(rb.CRC), crc32.Checksum(b[21:], crc32c); got != want {
					t.Errorf("crc = %08x, want %08x", got, want)
				}
				if rb.FirstOffset != 500 || int(rb.Length) != len(b)-12 || rb.Magic != 2 || rb.Attributes != int16(c) ||
					rb.NumRecords != int32(len(set.recs)) || rb.LastOffsetDelta != int32(len(set.recs)-1) ||
					rb.ProducerID != -1 || rb.ProducerEpoch != -1 || rb.FirstSequence != -1 {
					t.Errorf("batch = %+v", rb)
				}
				got := make([]Record, len(krecs))
				for i, kr := range krecs {
					if kr.Attributes != 0 {
						t.Errorf("record %d: attributes %d", i, kr.Attributes)
					}
					got[i] = Record{
						Offset:    rb.FirstOffset + int64(kr.OffsetDelta),
						Timestamp: time.UnixMilli(rb.FirstTimestamp + kr.TimestampDelta64),
						Key:       kr.Key,
						Value:     kr.Value,
					}
					for _, h := range kr.Headers {
						got[i].Headers = append(got[i].Headers, RecordHeader{Key: h.Key, Value: h.Value})
					}
				}
				if diff := diffRecords(got, set.recs, 500); diff != "" {
					t.Error(diff)
				}
			})
		}
	}
}

func TestDecoder_ReadsKmsg(t *testing.T) {
	var d Decoder
	for _, p := range producers {
		for _, set := range recordSets() {
			t.Run(p.name+"/"+set.name, func(t *testing.T) {
				b := kmsgBatch(t, set.recs, 42, p.codec, p.compress)
				h, err := d.Validate(b, 0)
				if err != nil {
					t.Fatal(err)
				}
				if h.Codec() != p.codec || h.BaseOffset != 42 || h.RecordCount != int32(len(set.recs)) {
					t.Errorf("header = %+v", h)
				}
				if diff := diffRecords(decodeAll(t, &d, b), set.recs, 42); diff != "" {
					t.Error(diff)
				}
			})
		}
	}
}

// Where our codec settings are a real client's, the bytes are the same.
func TestAppend_SameBytesAsKmsg(t *testing.T) {
	same := map[string]bool{"none": true, "gzip": true, "snappy-xerial": true, "lz4-64k": true, "zstd": true}
	for _, p := range producers {
		if !same[p.name] {
			continue
		}
		for _, set := range recordSets() {
			t.Run(p.name+"/"+set.name, func(t *testing.T) {
				got, err := Append(nil, set.recs, Options{BaseOffset: 7, Codec: p.codec})
				if err != nil {
					t.Fatal(err)
				}
				want := kmsgBatch(t, set.recs, 7, p.codec, p.compress)
				if !bytes.Equal(got, want) {
					i := 0
					for i < min(len(got), len(want)) && got[i] == want[i] {
						i++
					}
					t.Errorf("%d bytes, kmsg %d; first difference at byte %d", len(got), len(want), i)
				}
			})
		}
	}
}
