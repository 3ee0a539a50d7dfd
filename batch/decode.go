package batch

import (
	"encoding/binary"
	"errors"
	"fmt"
	"iter"
	"sync"
	"time"
)

// Decoder decodes the records of batches. It keeps scratch buffers between
// calls, so reusing one Decoder makes decoding allocation-free for
// uncompressed batches and cheap for compressed ones. The zero value is
// ready to use; a Decoder is not safe for concurrent use.
type Decoder struct {
	// MaxDecompressed bounds what one compressed batch may decompress to;
	// zero means DefaultMaxDecompressed. A batch over it is ErrCorrupt.
	// (A zstd frame that does not declare its size may take up to 8 MiB
	// while decoding before it is found to be over a smaller bound.)
	MaxDecompressed int

	raw     []byte // decompressed records
	headers []RecordHeader
	inflate decompressors

	// The oldest and newest record timestamps of the batch Validate last
	// accepted, in Unix milliseconds.
	minMs, maxMs int64
}

// Timestamps returns the oldest and newest timestamps, in Unix
// milliseconds, of the records of the batch that Validate or
// ValidateKeyed last accepted; both include the header's MaxTimestamp,
// which readers and retention trust. A broker checks them against its
// clock (Kafka's message.timestamp.before.max.ms and after.max.ms).
func (d *Decoder) Timestamps() (oldest, newest int64) { return d.minMs, d.maxMs }

// keepScratch is the largest decompression buffer Validate keeps for the
// next batch.
const keepScratch = 4 << 20

// MinRecordBytes is the least one encoded record takes: its length and
// attributes, timestamp delta, offset delta, key length, value length and
// header count, one byte each. A batch whose record count needs more bytes
// than it has is invalid before anything is decoded.
const MinRecordBytes = 7

// HeaderOverhead is what each header counts against a record's size limit
// besides its key and value: the least its two length varints take. So
// a record of millions of empty headers is as large as the bytes it takes.
const HeaderOverhead = 2

// RecordSize is what r counts against a record size limit (Kafka's
// max.message.bytes, passbook's MaxRecordBytes): its key, its value, and
// every header's key and value plus HeaderOverhead.
func RecordSize(r *Record) int {
	n := len(r.Key) + len(r.Value)
	for _, h := range r.Headers {
		n += len(h.Key) + len(h.Value) + HeaderOverhead
	}
	return n
}

// checkCount reports a batch whose record count cannot fit in the n bytes
// of its records section.
func checkCount(h *Header, n int) error {
	if h.RecordCount < 0 || int64(h.RecordCount) > int64(n)/MinRecordBytes {
		return fmt.Errorf("%w: %w: %d records cannot fit in %d bytes (batch at offset %d)", ErrCorrupt, ErrInvalidRecord, h.RecordCount, n, h.BaseOffset)
	}
	return nil
}

// body parses the header of the batch at the start of b, which must
// already be checked (see Check), and returns it with the batch's records
// section, decompressed into the Decoder's buffer if the batch is
// compressed (up to MaxDecompressed). It is the one place the records of
// a batch are reached: Records, RawRecords and Cursor all start here. An
// unknown codec is ErrCodec; records that do not decompress, or a record
// count the bytes cannot hold, are ErrCorrupt.
func (d *Decoder) body(b []byte) (Header, []byte, error) {
	h, err := ParseHeader(b)
	if err != nil {
		return h, nil, err
	}
	if len(b) < h.Size() {
		return h, nil, fmt.Errorf("%w: %d bytes, batch needs %d", ErrShort, len(b), h.Size())
	}
	data := b[HeaderSize:h.Size()]
	if c := h.Codec(); c > Zstd {
		return h, nil, fmt.Errorf("%w %d", ErrCodec, c)
	} else if c != None {
		d.inflate.limit = d.MaxDecompressed
		d.raw, err = d.inflate.decompress(c, d.raw[:0], data)
		if err != nil {
			return h, nil, fmt.Errorf("%w: %s: %w", ErrCorrupt, c, err)
		}
		data = d.raw
	}
	if err := checkCount(&h, len(data)); err != nil {
		return h, nil, err
	}
	return h, data, nil
}

// Records iterates over the records of the batch at the start of b, which
// must already be checked (see Check). Each Record's byte slices point into
// b or into the Decoder's buffers and are valid only until the iteration
// moves on. A decoding error is yielded once, as the last element.
func (d *Decoder) Records(b []byte) iter.Seq2[Record, error] {
	return func(yield func(Record, error) bool) {
		h, data, err := d.body(b)
		if err != nil {
			yield(Record{}, err)
			return
		}
		var rec Record
		for i := int32(0); i < h.RecordCount; i++ {
			n, err := d.decodeRecord(&rec, data, &h)
			if err != nil {
				yield(Record{}, recordError(err, i, h.BaseOffset))
				return
			}
			data = data[n:]
			if !yield(rec, nil) {
				return
			}
		}
		if len(data) != 0 {
			yield(Record{}, trailingError(len(data), h.BaseOffset))
		}
	}
}

// trailingError reports n bytes after the last record of the batch at
// base.
func trailingError(n int, base int64) error {
	return fmt.Errorf("%w: %d bytes after the last record of batch at offset %d", ErrCorrupt, n, base)
}

// Records iterates over the records of the batch at the start of b with a
// Decoder of its own. See Decoder.Records.
func Records(b []byte) iter.Seq2[Record, error] {
	return func(yield func(Record, error) bool) {
		// Pooled, so that compressed batches do not make a codec each time.
		d := decoders.Get().(*Decoder)
		defer decoders.Put(d)
		d.Records(b)(yield)
	}
}

var decoders = sync.Pool{New: func() any { return new(Decoder) }}

type decodeError string

func (e decodeError) Error() string { return string(e) }

// Is makes every decoding error an ErrInvalidRecord.
func (e decodeError) Is(target error) bool { return target == ErrInvalidRecord }

const (
	errVarint      = decodeError("bad varint")
	errLength      = decodeError("length runs past the record")
	errOverflow    = decodeError("record runs past the batch")
	errHeaderCount = decodeError("header count larger than the bytes left could hold")
)

// recordError wraps an error of record i of the batch at base. An
// ErrTooLarge stays one, without ErrCorrupt: the record is well formed.
func recordError(err error, i int32, base int64) error {
	if errors.Is(err, ErrTooLarge) {
		return fmt.Errorf("record %d of batch at offset %d: %w", i, base, err)
	}
	return fmt.Errorf("%w: record %d of batch at offset %d: %w", ErrCorrupt, i, base, err)
}

// decodeRecord decodes the record at the start of data into rec and returns
// its encoded size.
func (d *Decoder) decodeRecord(rec *Record, data []byte, h *Header) (int, error) {
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
	tsDelta, n := binary.Varint(body)
	if n <= 0 {
		return 0, errVarint
	}
	body = body[n:]
	offDelta, n := binary.Varint(body)
	if n <= 0 {
		return 0, errVarint
	}
	body = body[n:]
	var err error
	if rec.Key, body, err = readBytes(body); err != nil {
		return 0, err
	}
	if rec.Value, body, err = readBytes(body); err != nil {
		return 0, err
	}
	count, n := binary.Varint(body)
	if n <= 0 || count < 0 {
		return 0, errVarint
	}
	body = body[n:]
	// Every header takes at least HeaderOverhead bytes: a count the bytes
	// left cannot hold is invalid, and is refused before anything is
	// allocated for it.
	if count > int64(len(body)/HeaderOverhead) {
		return 0, errHeaderCount
	}
	rec.Headers = nil
	if count > 0 {
		d.headers = d.headers[:0]
		for range count {
			klen, n := binary.Varint(body)
			if n <= 0 || klen < 0 || klen > int64(len(body)-n) {
				return 0, errLength
			}
			key := body[n : n+int(klen)]
			body = body[n+int(klen):]
			var val []byte
			if val, body, err = readBytes(body); err != nil {
				return 0, err
			}
			d.headers = append(d.headers, RecordHeader{Key: string(key), Value: val})
		}
		rec.Headers = d.headers
	}
	if len(body) != 0 {
		return 0, errLength
	}
	rec.Offset = h.BaseOffset + offDelta
	ms := h.BaseTimestamp + tsDelta
	if h.Attributes&AttrLogAppendTime != 0 {
		ms = h.MaxTimestamp
	}
	rec.Timestamp = time.UnixMilli(ms)
	return total, nil
}

// readBytes reads a varint-length-prefixed byte string (−1 = nil).
func readBytes(b []byte) (val, rest []byte, err error) {
	l, n := binary.Varint(b)
	if n <= 0 {
		return nil, nil, errVarint
	}
	b = b[n:]
	if l == -1 {
		return nil, b, nil
	}
	if l < -1 || l > int64(len(b)) {
		return nil, nil, errLength
	}
	return b[:l:l], b[l:], nil
}
