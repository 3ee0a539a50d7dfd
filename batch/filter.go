package batch

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"iter"
	"math"
)

// Compaction reads stored batches record by record without decoding
// values and headers (RawRecords), and writes batches that keep some of
// the records of another byte for byte (AppendFiltered) or none of them
// (AppendEmpty). Every record kept keeps its offset and timestamp: both
// are deltas from header fields that do not change.

// RawRecord is one record of a batch as it is encoded: enough to decide
// whether compaction keeps it, and its bytes to keep it unchanged.
type RawRecord struct {
	Offset    int64  // base offset + offset delta
	Key       []byte // nil when the record has no key
	Tombstone bool   // the value is null
	Raw       []byte // the whole encoding, length prefix included
}

// RawRecords iterates over the records of the batch at the start of b,
// which must already be checked (see Check), decoding only each record's
// length, offset delta, key and whether its value is null. Key and Raw
// point into b or the Decoder's buffers and are valid only until the
// iteration moves on. A decoding error is yielded once, as the last
// element.
func (d *Decoder) RawRecords(b []byte) iter.Seq2[RawRecord, error] {
	return func(yield func(RawRecord, error) bool) {
		h, data, err := d.body(b)
		if err != nil {
			yield(RawRecord{}, err)
			return
		}
		var rec RawRecord
		for i := int32(0); i < h.RecordCount; i++ {
			n, err := parseRaw(&rec, data, h.BaseOffset)
			if err != nil {
				yield(RawRecord{}, fmt.Errorf("%w: record %d of batch at offset %d: %w", ErrCorrupt, i, h.BaseOffset, err))
				return
			}
			data = data[n:]
			if !yield(rec, nil) {
				return
			}
		}
		if len(data) != 0 {
			yield(RawRecord{}, trailingError(len(data), h.BaseOffset))
		}
	}
}

// parseRaw reads the record at the start of data into rec and returns its
// encoded size. The value's bytes and the headers are skipped, not
// checked: a reader decodes them in full.
func parseRaw(rec *RawRecord, data []byte, base int64) (int, error) {
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
	if _, n = binary.Varint(body); n <= 0 {
		return 0, errVarint
	}
	body = body[n:]
	offDelta, n := binary.Varint(body)
	if n <= 0 {
		return 0, errVarint
	}
	body = body[n:]
	key, body, err := readBytes(body)
	if err != nil {
		return 0, err
	}
	vlen, n := binary.Varint(body)
	if n <= 0 || vlen < -1 || vlen > int64(len(body)-n) {
		return 0, errLength
	}
	rec.Offset = base + offDelta
	rec.Key = key
	rec.Tombstone = vlen == -1
	rec.Raw = data[:total:total]
	return total, nil
}

// AppendFiltered appends to dst the checked batch src with only some of
// its records: records holds the encodings of n of them (RawRecord.Raw),
// in their order. The header is src's but for the length, the record
// count and the CRC: base offset, last offset delta, timestamps, producer
// id, epoch and base sequence, and attributes stay. So every record kept
// keeps its offset, timestamp and sequence number, and the batch still
// spans src's offsets even if its first or last records are gone, as
// Kafka's compaction leaves batches (KAFKA-5443). The records are
// compressed with src's codec.
func AppendFiltered(dst, src, records []byte, n int) ([]byte, error) {
	h, err := ParseHeader(src)
	if err != nil {
		return dst, err
	}
	start := len(dst)
	dst = append(dst, src[:HeaderSize]...)
	if dst, err = compress(h.Codec(), dst, records); err != nil {
		return dst[:start], err
	}
	b := dst[start:]
	binary.BigEndian.PutUint32(b[offRecordCount:], uint32(n))
	binary.BigEndian.PutUint32(b[offLength:], uint32(len(b)-LengthOverhead))
	binary.BigEndian.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:], castagnoli))
	return dst, nil
}

// MaxEmptySpan is the most offsets one empty batch spans: its last offset
// delta is an int32.
const MaxEmptySpan = math.MaxInt32 + 1

// AppendEmpty appends to dst a batch with no records that spans the
// offsets base to last (at most MaxEmptySpan of them): what compaction
// leaves where it removed every record of whole batches, so that the
// batches of a log still follow one another offset by offset. Kafka's
// compaction writes such batches too, and clients skip them. Both
// timestamps are maxTimestamp, the newest timestamp of the batches it
// replaces (−1 for none), so that a segment's newest timestamp does not
// change. There is no producer id.
func AppendEmpty(dst []byte, base, last, maxTimestamp int64) []byte {
	start := len(dst)
	dst = append(dst, make([]byte, HeaderSize)...)
	h := dst[start:]
	binary.BigEndian.PutUint64(h[offBaseOffset:], uint64(base))
	binary.BigEndian.PutUint32(h[offLength:], HeaderSize-LengthOverhead)
	h[offMagic] = Magic
	binary.BigEndian.PutUint32(h[offLastOffsetDelta:], uint32(last-base))
	binary.BigEndian.PutUint64(h[offBaseTimestamp:], uint64(maxTimestamp))
	binary.BigEndian.PutUint64(h[offMaxTimestamp:], uint64(maxTimestamp))
	binary.BigEndian.PutUint64(h[offProducerID:], math.MaxUint64) // −1
	binary.BigEndian.PutUint16(h[offProducerEpoch:], math.MaxUint16)
	binary.BigEndian.PutUint32(h[offBaseSequence:], math.MaxUint32)
	binary.BigEndian.PutUint32(h[offCRC:], crc32.Checksum(h[offAttributes:], castagnoli))
	return dst
}
