package batch

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"time"
)

// Frozen header layout; see the package doc.
const (
	HeaderSize = 61 // bytes before the first record
	Magic      = 2

	// LengthOverhead is what the length field does not count: the base
	// offset and the length field itself.
	LengthOverhead = 12

	offBaseOffset      = 0
	offLength          = 8
	offLeaderEpoch     = 12
	offMagic           = 16
	offCRC             = 17
	offAttributes      = 21
	offLastOffsetDelta = 23
	offBaseTimestamp   = 27
	offMaxTimestamp    = 35
	offProducerID      = 43
	offProducerEpoch   = 51
	offBaseSequence    = 53
	offRecordCount     = 57
)

// Attribute bits.
const (
	codecMask         = 0x07
	AttrLogAppendTime = 0x08
	AttrTransactional = 0x10
	AttrControl       = 0x20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Header is a decoded batch header.
type Header struct {
	BaseOffset           int64
	Length               int32
	PartitionLeaderEpoch int32
	Magic                int8
	CRC                  uint32
	Attributes           int16
	LastOffsetDelta      int32
	BaseTimestamp        int64
	MaxTimestamp         int64
	ProducerID           int64
	ProducerEpoch        int16
	BaseSequence         int32
	RecordCount          int32
}

// Size is the batch's total size in bytes.
func (h Header) Size() int { return int(h.Length) + LengthOverhead }

// LastOffset is the offset of the batch's last record.
func (h Header) LastOffset() int64 { return h.BaseOffset + int64(h.LastOffsetDelta) }

// NextOffset is the offset just past the batch.
func (h Header) NextOffset() int64 { return h.LastOffset() + 1 }

// Codec is the batch's compression codec.
func (h Header) Codec() Codec { return Codec(h.Attributes & codecMask) }

// MaxTime is the newest timestamp in the batch.
func (h Header) MaxTime() time.Time { return time.UnixMilli(h.MaxTimestamp) }

// IsControl reports whether the batch is a transaction control batch.
func (h Header) IsControl() bool { return h.Attributes&AttrControl != 0 }

// ParseHeader decodes the header at the start of b. It checks the magic
// byte and that the length field is plausible, but not the CRC: see Check.
func ParseHeader(b []byte) (Header, error) {
	if len(b) < HeaderSize {
		return Header{}, fmt.Errorf("%w: %d bytes, header needs %d", ErrShort, len(b), HeaderSize)
	}
	h := Header{
		BaseOffset:           int64(binary.BigEndian.Uint64(b[offBaseOffset:])),
		Length:               int32(binary.BigEndian.Uint32(b[offLength:])),
		PartitionLeaderEpoch: int32(binary.BigEndian.Uint32(b[offLeaderEpoch:])),
		Magic:                int8(b[offMagic]),
		CRC:                  binary.BigEndian.Uint32(b[offCRC:]),
		Attributes:           int16(binary.BigEndian.Uint16(b[offAttributes:])),
		LastOffsetDelta:      int32(binary.BigEndian.Uint32(b[offLastOffsetDelta:])),
		BaseTimestamp:        int64(binary.BigEndian.Uint64(b[offBaseTimestamp:])),
		MaxTimestamp:         int64(binary.BigEndian.Uint64(b[offMaxTimestamp:])),
		ProducerID:           int64(binary.BigEndian.Uint64(b[offProducerID:])),
		ProducerEpoch:        int16(binary.BigEndian.Uint16(b[offProducerEpoch:])),
		BaseSequence:         int32(binary.BigEndian.Uint32(b[offBaseSequence:])),
		RecordCount:          int32(binary.BigEndian.Uint32(b[offRecordCount:])),
	}
	if h.Magic != Magic {
		return h, fmt.Errorf("%w %d", ErrMagic, h.Magic)
	}
	if h.Length < HeaderSize-LengthOverhead {
		return h, fmt.Errorf("%w: length field %d is below the header size", ErrCorrupt, h.Length)
	}
	if h.LastOffsetDelta < 0 || h.RecordCount < 0 {
		return h, fmt.Errorf("%w: negative record count or offset delta", ErrCorrupt)
	}
	return h, nil
}

// Check parses the header of the batch at the start of b and verifies its
// CRC. b must hold the whole batch; bytes after it are ignored. It does
// not decode the records: see Validate.
func Check(b []byte) (Header, error) {
	h, err := ParseHeader(b)
	if err != nil {
		return h, err
	}
	if len(b) < h.Size() {
		return h, fmt.Errorf("%w: %d bytes, batch needs %d", ErrShort, len(b), h.Size())
	}
	if got := crc32.Checksum(b[offAttributes:h.Size()], castagnoli); got != h.CRC {
		return h, fmt.Errorf("%w: crc is %08x, header says %08x", ErrCorrupt, got, h.CRC)
	}
	return h, nil
}

// SetBaseOffset rewrites the base offset of the batch at the start of b.
// The CRC does not cover it, so the batch stays valid.
func SetBaseOffset(b []byte, offset int64) {
	binary.BigEndian.PutUint64(b[offBaseOffset:], uint64(offset))
}

// SetLeaderEpoch rewrites the partition leader epoch (not covered by the CRC).
func SetLeaderEpoch(b []byte, epoch int32) {
	binary.BigEndian.PutUint32(b[offLeaderEpoch:], uint32(epoch))
}

// SetLogAppendTime stamps the batch with the broker's time, as Kafka does
// for topics with message.timestamp.type=LogAppendTime, and recomputes the
// CRC.
func SetLogAppendTime(b []byte, t time.Time) {
	attrs := binary.BigEndian.Uint16(b[offAttributes:]) | AttrLogAppendTime
	binary.BigEndian.PutUint16(b[offAttributes:], attrs)
	binary.BigEndian.PutUint64(b[offMaxTimestamp:], uint64(t.UnixMilli()))
	size := int(binary.BigEndian.Uint32(b[offLength:])) + LengthOverhead
	binary.BigEndian.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:size], castagnoli))
}
