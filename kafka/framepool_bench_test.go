package kafka

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"
)

// BenchmarkReadFrame reads request frames of 1 KiB, 64 KiB and 1 MiB
// from a stream the way readLoop does — the size, then readFrame — and
// gives each buffer back as readLoop does for a Produce request, with
// the pool ("pooled") and with the buffer that grew for each request,
// as before the pool ("unpooled", readFrameUnpooled below). Each reports
// ns and bytes allocated per frame; the pooled case also its time as a
// fraction of the unpooled one's in the same run ("x-unpooled").
//
//	go test ./kafka -run '^$' -bench ReadFrame -benchtime 2s
func BenchmarkReadFrame(b *testing.B) {
	for _, size := range []int{1 << 10, 64 << 10, 1 << 20} {
		frame := make([]byte, size)
		binary.BigEndian.PutUint16(frame, uint16(0)) // Produce
		stream := bytes.Repeat(append(binary.BigEndian.AppendUint32(nil, uint32(size)), frame...), max(1, (8<<20)/size))
		var unpooled float64
		for _, way := range []string{"unpooled", "pooled"} {
			b.Run(fmt.Sprintf("%dKiB/%s", size>>10, way), func(b *testing.B) {
				s := &Server{polls: context.Background(), requestBytes: newByteBudget(100 << 20)}
				s.frames = newFramePool(s.requestBytes)
				c := &conn{s: s}
				r := bytes.NewReader(stream)
				br := bufio.NewReaderSize(r, 8<<10)
				deadline := time.Now().Add(time.Hour)
				var hdr [4]byte
				b.SetBytes(int64(size))
				b.ReportAllocs()
				for b.Loop() {
					if _, err := io.ReadFull(br, hdr[:]); errors.Is(err, io.EOF) {
						r.Reset(stream)
						br.Reset(r)
						io.ReadFull(br, hdr[:])
					}
					n := int(binary.BigEndian.Uint32(hdr[:]))
					var got []byte
					var charged int64
					var err error
					if way == "pooled" {
						got, charged, err = c.readFrame(br, n, deadline)
					} else {
						got, charged, err = c.readFrameUnpooled(br, n, deadline)
					}
					if err != nil || len(got) != n {
						b.Fatalf("frame of %d bytes: %v", len(got), err)
					}
					if way == "pooled" && reusableFrame(got) {
						s.frames.put(got)
					} else {
						s.requestBytes.release(charged)
					}
				}
				perFrame := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
				if way == "unpooled" {
					unpooled = perFrame
				} else if unpooled > 0 {
					b.ReportMetric(perFrame/unpooled, "x-unpooled")
				}
			})
		}
	}
}

// readFrameUnpooled is readFrame as it was before the pool: a fresh
// buffer per request, grown by doubling from 4 KiB as the bytes arrive,
// each growth a new zeroed allocation and a copy. The baseline of
// BenchmarkReadFrame.
func (c *conn) readFrameUnpooled(br *bufio.Reader, n int, deadline time.Time) (frame []byte, charged int64, err error) {
	ctx, cancel := context.WithDeadline(c.s.polls, deadline)
	defer cancel()
	const first = 4 << 10
	for len(frame) < n {
		if len(frame) == cap(frame) {
			grown := min(n, max(first, 2*cap(frame)))
			more := int64(grown - cap(frame))
			if err := c.s.requestBytes.acquire(ctx, more); err != nil {
				return nil, charged, err
			}
			charged += more
			frame = append(make([]byte, 0, grown), frame...)
		}
		k, err := br.Read(frame[len(frame):cap(frame)])
		frame = frame[:len(frame)+k]
		if err != nil && len(frame) < n {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, charged, err
		}
	}
	return frame, charged, nil
}
