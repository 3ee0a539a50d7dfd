package batch

import (
	"encoding/binary"
	"hash/crc32"
)

// SetTransactional sets the transactional attribute bit of the batch at
// the start of b and recomputes its CRC (a batch re-encoded by the broker,
// such as one it recompresses, keeps the bit its producer set).
func SetTransactional(b []byte) {
	attrs := binary.BigEndian.Uint16(b[offAttributes:]) | AttrTransactional
	binary.BigEndian.PutUint16(b[offAttributes:], attrs)
	size := int(binary.BigEndian.Uint32(b[offLength:])) + LengthOverhead
	binary.BigEndian.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:size], castagnoli))
}
