package batch

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"sync"
	"time"
)

// Record is one immutable log entry.
type Record struct {
	// Offset is the record's position in its partition. It is ignored when
	// encoding: the log assigns offsets.
	Offset    int64
	Timestamp time.Time // zero means "now" when the log encodes it
	Key       []byte    // nil means no key
	Value     []byte    // nil makes the record a tombstone
	Headers   []RecordHeader
}

// RecordHeader is one key/value header of a record.
type RecordHeader struct {
	Key   string
	Value []byte
}

// Tombstone reports whether the record deletes its key (a null value).
func (r Record) Tombstone() bool { return r.Value == nil }

// Clone returns a copy that shares no memory with r, for keeping a record
// after the iteration that produced it moves on.
func (r Record) Clone() Record {
	c := r
	c.Key = cloneBytes(r.Key)
	c.Value = cloneBytes(r.Value)
	if r.Headers != nil {
		c.Headers = make([]RecordHeader, len(r.Headers))
		for i, h := range r.Headers {
			c.Headers[i] = RecordHeader{Key: h.Key, Value: cloneBytes(h.Value)}
		}
	}
	return c
}

func cloneBytes(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append(make([]byte, 0, len(b)), b...)
}

// bodySize is the size of r's encoding after its length prefix.
func (r *Record) bodySize(tsDelta, offsetDelta int64) int {
	n := 1 + varintLen(tsDelta) + varintLen(offsetDelta) // attributes, deltas
	n += bytesLen(r.Key) + bytesLen(r.Value)
	n += varintLen(int64(len(r.Headers)))
	for _, h := range r.Headers {
		n += varintLen(int64(len(h.Key))) + len(h.Key) + bytesLen(h.Value)
	}
	return n
}

func bytesLen(b []byte) int {
	if b == nil {
		return 1 // varint(-1)
	}
	return varintLen(int64(len(b))) + len(b)
}

// varintLen is the size of v as a zigzag varint.
func varintLen(v int64) int {
	u := uint64(v<<1) ^ uint64(v>>63)
	n := 1
	for u >= 0x80 {
		u >>= 7
		n++
	}
	return n
}

func appendBytes(dst, b []byte) []byte {
	if b == nil {
		return binary.AppendVarint(dst, -1)
	}
	dst = binary.AppendVarint(dst, int64(len(b)))
	return append(dst, b...)
}

// Options describe a batch to encode.
type Options struct {
	BaseOffset    int64
	Codec         Codec
	ProducerID    int64 // −1 when none; the zero Options means −1
	ProducerEpoch int16
	BaseSequence  int32
	// Idempotent says ProducerID, ProducerEpoch and BaseSequence are set.
	// Without it they are written as −1, as Kafka does for plain producers.
	Idempotent bool
	// Now stamps records whose Timestamp is zero; zero means time.Now().
	Now time.Time
}

// Append encodes recs as one batch and appends it to dst. Records with a
// zero Timestamp get o.Now. It returns an error only for an unknown codec
// or a failed compression, or ErrEmpty for no records.
func Append(dst []byte, recs []Record, o Options) ([]byte, error) {
	if len(recs) == 0 {
		return dst, ErrEmpty
	}
	now := o.Now
	if now.IsZero() {
		now = time.Now()
	}
	nowMs := now.UnixMilli()
	baseMs, maxMs := int64(-1), int64(-1)
	for i := range recs {
		ms := nowMs
		if !recs[i].Timestamp.IsZero() {
			ms = recs[i].Timestamp.UnixMilli()
		}
		if baseMs == -1 || ms < baseMs {
			baseMs = ms
		}
		if ms > maxMs {
			maxMs = ms
		}
	}

	start := len(dst)
	dst = append(dst, make([]byte, HeaderSize)...)
	h := dst[start:]
	binary.BigEndian.PutUint64(h[offBaseOffset:], uint64(o.BaseOffset))
	h[offMagic] = Magic
	binary.BigEndian.PutUint16(h[offAttributes:], uint16(o.Codec)&codecMask)
	binary.BigEndian.PutUint32(h[offLastOffsetDelta:], uint32(len(recs)-1))
	binary.BigEndian.PutUint64(h[offBaseTimestamp:], uint64(baseMs))
	binary.BigEndian.PutUint64(h[offMaxTimestamp:], uint64(maxMs))
	pid, epoch, seq := int64(-1), int16(-1), int32(-1)
	if o.Idempotent {
		pid, epoch, seq = o.ProducerID, o.ProducerEpoch, o.BaseSequence
	}
	binary.BigEndian.PutUint64(h[offProducerID:], uint64(pid))
	binary.BigEndian.PutUint16(h[offProducerEpoch:], uint16(epoch))
	binary.BigEndian.PutUint32(h[offBaseSequence:], uint32(seq))
	binary.BigEndian.PutUint32(h[offRecordCount:], uint32(len(recs)))

	if o.Codec == None {
		dst = appendRecords(dst, recs, baseMs, nowMs)
	} else {
		scratch := scratchBufs.Get().(*[]byte)
		raw := appendRecords((*scratch)[:0], recs, baseMs, nowMs)
		var err error
		dst, err = compress(o.Codec, dst, raw)
		if cap(raw) <= maxPooledScratch {
			*scratch = raw
			scratchBufs.Put(scratch)
		}
		if err != nil {
			return dst[:start], err
		}
	}
	b := dst[start:]
	binary.BigEndian.PutUint32(b[offLength:], uint32(len(b)-LengthOverhead))
	binary.BigEndian.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:], castagnoli))
	return dst, nil
}

// scratchBufs hold the uncompressed records of a batch being compressed.
var scratchBufs = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledScratch keeps one huge batch from pinning its buffer forever.
const maxPooledScratch = 4 << 20

func appendRecords(dst []byte, recs []Record, baseMs, nowMs int64) []byte {
	for i := range recs {
		r := &recs[i]
		ms := nowMs
		if !r.Timestamp.IsZero() {
			ms = r.Timestamp.UnixMilli()
		}
		tsDelta := ms - baseMs
		dst = binary.AppendVarint(dst, int64(r.bodySize(tsDelta, int64(i))))
		dst = append(dst, 0) // attributes: unused in v2
		dst = binary.AppendVarint(dst, tsDelta)
		dst = binary.AppendVarint(dst, int64(i))
		dst = appendBytes(dst, r.Key)
		dst = appendBytes(dst, r.Value)
		dst = binary.AppendVarint(dst, int64(len(r.Headers)))
		for _, h := range r.Headers {
			dst = binary.AppendVarint(dst, int64(len(h.Key)))
			dst = append(dst, h.Key...)
			dst = appendBytes(dst, h.Value)
		}
	}
	return dst
}

func (c Codec) String() string {
	switch c {
	case None:
		return "none"
	case Gzip:
		return "gzip"
	case Snappy:
		return "snappy"
	case LZ4:
		return "lz4"
	case Zstd:
		return "zstd"
	}
	return fmt.Sprintf("codec(%d)", int8(c))
}
