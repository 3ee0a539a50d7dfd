package batch

import "fmt"

// Codec is a batch compression codec (attribute bits 0–2).
type Codec int8

// The five Kafka codecs.
const (
	None   Codec = 0
	Gzip   Codec = 1
	Snappy Codec = 2
	LZ4    Codec = 3
	Zstd   Codec = 4
)

// compress appends the compressed form of src to dst.
func compress(c Codec, dst, src []byte) ([]byte, error) {
	switch c {
	case None:
		return append(dst, src...), nil
	}
	return dst, fmt.Errorf("%w %d", ErrCodec, c)
}

// decompressors holds reusable decompression state.
type decompressors struct{}

// decompress appends the decompressed form of src to dst.
func (d *decompressors) decompress(c Codec, dst, src []byte) ([]byte, error) {
	switch c {
	case None:
		return append(dst, src...), nil
	}
	return dst, fmt.Errorf("%w %d", ErrCodec, c)
}
