package batch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

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

// DefaultMaxDecompressed is the most a compressed batch may decompress to
// when Decoder.MaxDecompressed is zero. It guards against decompression
// bombs: a few KiB of zeros can claim gigabytes.
const DefaultMaxDecompressed = 64 << 20

// Compressed output follows the Java client: gzip at the default level,
// snappy in xerial framing with 32 KiB blocks, lz4 frames with 64 KiB
// independent blocks, zstd at level 3. Every Kafka client reads these.
// franz-go's producer writes one raw snappy block unless streaming
// compression is on; Decoder reads both. Snappy blocks come from s2's
// fast snappy-compatible encoder, as in franz-go (snappy.Encode is s2's
// slower "better" mode).
const (
	xerialBlockSize = 32 << 10
	xerialHeaderLen = 16 // magic, version, minimum compatible version
)

var xerialMagic = []byte("\x82SNAPPY\x00")

// zstdWindow is the largest window zstd levels 1–19 use (windowLog 23).
const zstdWindow = 8 << 20

// The encoders are pooled because Append runs on many goroutines at once.
// Each pooled zstd encoder runs EncodeAll inline (concurrency 1), so the
// pool holds no more encoders than there are concurrent Appends.
var (
	gzipWriters = sync.Pool{New: func() any {
		e := new(streamEncoder)
		e.w, _ = gzip.NewWriterLevel(&e.out, gzip.DefaultCompression)
		return e
	}}
	lz4Writers = sync.Pool{New: func() any {
		e := new(streamEncoder)
		w := lz4.NewWriter(&e.out)
		if err := w.Apply(lz4.BlockSizeOption(lz4.Block64Kb)); err != nil {
			panic(err) // a constant option: cannot fail
		}
		e.w = w
		return e
	}}
	zstdEncoders = sync.Pool{New: func() any {
		e, err := zstd.NewWriter(nil,
			zstd.WithEncoderLevel(zstd.SpeedDefault),
			zstd.WithEncoderConcurrency(1),
			zstd.WithWindowSize(64<<10), // bounds the reader's memory, as franz-go does
			zstd.WithZeroFrames(true))
		if err != nil {
			panic(err) // constant options: cannot fail
		}
		return e
	}}
)

// streamEncoder is a pooled io.Writer-based codec writing into out.
type streamEncoder struct {
	w interface {
		io.WriteCloser
		Reset(io.Writer)
	}
	out appendWriter
}

// appendWriter is an io.Writer appending to a slice.
type appendWriter struct{ b []byte }

func (a *appendWriter) Write(p []byte) (int, error) {
	a.b = append(a.b, p...)
	return len(p), nil
}

// compress appends the compressed form of src to dst.
func compress(c Codec, dst, src []byte) ([]byte, error) {
	switch c {
	case None:
		return append(dst, src...), nil
	case Gzip:
		return compressStream(&gzipWriters, dst, src)
	case Snappy:
		return appendXerial(dst, src), nil
	case LZ4:
		return compressStream(&lz4Writers, dst, src)
	case Zstd:
		e := zstdEncoders.Get().(*zstd.Encoder)
		defer zstdEncoders.Put(e)
		return e.EncodeAll(src, dst), nil
	}
	return dst, fmt.Errorf("%w %d", ErrCodec, c)
}

func compressStream(pool *sync.Pool, dst, src []byte) ([]byte, error) {
	e := pool.Get().(*streamEncoder)
	e.out.b = dst
	e.w.Reset(&e.out)
	_, err := e.w.Write(src)
	if err == nil {
		err = e.w.Close()
	}
	dst = e.out.b
	e.out.b = nil // do not keep the caller's buffer alive in the pool
	pool.Put(e)
	return dst, err
}

// appendXerial appends src snappy-compressed in xerial framing.
func appendXerial(dst, src []byte) []byte {
	dst = append(dst, xerialMagic...)
	dst = binary.BigEndian.AppendUint32(dst, 1) // version
	dst = binary.BigEndian.AppendUint32(dst, 1) // minimum compatible version
	for len(src) > 0 {
		n := min(len(src), xerialBlockSize)
		at := len(dst)
		dst = slices.Grow(dst, 4+s2.MaxEncodedLen(n))
		block := s2.EncodeSnappy(dst[at+4:cap(dst)], src[:n]) // in place: there is room
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(block)))
		dst = dst[:at+4+len(block)]
		src = src[n:]
	}
	return dst
}

// decompressors holds reusable decompression state. The codecs are made
// on first use and kept for the next batch.
type decompressors struct {
	src     bytes.Reader
	gzip    gzip.Reader
	lz4     *lz4.Reader
	zstd    *zstd.Decoder
	zstdMax uint64 // the memory bound zstd was made with

	limit int // output bound; zero means DefaultMaxDecompressed
}

var errTooBig = errors.New("decompressed size over the limit")

// decompress appends the decompressed form of src to dst, failing if that
// is more than d.limit bytes.
func (d *decompressors) decompress(c Codec, dst, src []byte) ([]byte, error) {
	limit := d.limit
	if limit <= 0 {
		limit = DefaultMaxDecompressed
	}
	switch c {
	case None:
		return append(dst, src...), nil
	case Gzip:
		d.src.Reset(src)
		if err := d.gzip.Reset(&d.src); err != nil {
			return dst, err
		}
		return readLimited(dst, &d.gzip, limit)
	case Snappy:
		return decodeSnappy(dst, src, limit)
	case LZ4:
		d.src.Reset(src)
		if d.lz4 == nil {
			d.lz4 = lz4.NewReader(&d.src)
		} else {
			d.lz4.Reset(&d.src)
		}
		return readLimited(dst, d.lz4, limit)
	case Zstd:
		var fh zstd.Header
		if fh.Decode(src) == nil && fh.HasFCS && fh.FrameContentSize > uint64(limit) {
			return dst, fmt.Errorf("%w: %d bytes", errTooBig, limit)
		}
		// The decoder refuses frames whose window is over its memory
		// bound. Streaming writers (Java's) declare the level's window
		// whatever the size, up to 8 MiB for levels 1–19, so the bound
		// is at least that and the limit is checked on the output.
		zmax := uint64(max(limit, zstdWindow))
		if d.zstd == nil || d.zstdMax != zmax {
			z, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(zmax))
			if err != nil {
				return dst, err
			}
			d.zstd, d.zstdMax = z, zmax
		}
		start := len(dst)
		out, err := d.zstd.DecodeAll(src, dst)
		if errors.Is(err, zstd.ErrDecoderSizeExceeded) || len(out)-start > limit {
			return dst, fmt.Errorf("%w: %d bytes", errTooBig, limit)
		}
		return out, err
	}
	return dst, fmt.Errorf("%w %d", ErrCodec, c)
}

// readLimited appends what r yields to dst, failing once it exceeds limit
// bytes. It never reads more than limit+1 bytes.
func readLimited(dst []byte, r io.Reader, limit int) ([]byte, error) {
	start := len(dst)
	for {
		if len(dst)-start > limit {
			return dst, fmt.Errorf("%w: %d bytes", errTooBig, limit)
		}
		if len(dst) == cap(dst) {
			dst = append(dst, 0)[:len(dst)] // grow geometrically
		}
		n, err := r.Read(dst[len(dst):min(cap(dst), start+limit+1)])
		dst = dst[:len(dst)+n]
		if err == io.EOF {
			return dst, nil
		}
		if err != nil {
			return dst, err
		}
	}
}

// decodeSnappy decodes a raw snappy block or xerial-framed blocks. Lengths
// are checked against limit before anything is allocated, and blocks are
// decoded strictly: Java's snappy rejects the s2 extensions.
func decodeSnappy(dst, src []byte, limit int) ([]byte, error) {
	if len(src) < xerialHeaderLen || !bytes.HasPrefix(src, xerialMagic) {
		return decodeSnappyBlock(dst, src, limit)
	}
	total := 0
	for rest := src[xerialHeaderLen:]; len(rest) > 0; {
		block, next, err := xerialBlock(rest)
		if err != nil {
			return dst, err
		}
		n, err := snappy.DecodedLen(block)
		if err != nil {
			return dst, err
		}
		if total += n; total > limit {
			return dst, fmt.Errorf("%w: %d bytes", errTooBig, limit)
		}
		rest = next
	}
	dst = slices.Grow(dst, total)
	for rest := src[xerialHeaderLen:]; len(rest) > 0; {
		block, next, _ := xerialBlock(rest)
		var err error
		if dst, err = decodeSnappyBlock(dst, block, limit); err != nil {
			return dst, err
		}
		rest = next
	}
	return dst, nil
}

var errXerial = errors.New("malformed xerial snappy framing")

// xerialBlock splits the first length-prefixed block off b.
func xerialBlock(b []byte) (block, rest []byte, err error) {
	if len(b) < 4 {
		return nil, nil, errXerial
	}
	n := binary.BigEndian.Uint32(b)
	if uint64(n) > uint64(len(b)-4) {
		return nil, nil, errXerial
	}
	return b[4 : 4+n], b[4+n:], nil
}

// decodeSnappyBlock appends the decoded raw snappy block src to dst.
func decodeSnappyBlock(dst, src []byte, limit int) ([]byte, error) {
	n, err := snappy.DecodedLen(src)
	if err != nil {
		return dst, err
	}
	if n > limit {
		return dst, fmt.Errorf("%w: %d bytes", errTooBig, limit)
	}
	dst = slices.Grow(dst, n)
	out, err := snappy.DecodeStrict(dst[len(dst):len(dst)+n], src)
	if err != nil {
		return dst, err
	}
	return dst[:len(dst)+len(out)], nil
}
