package kafka

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"sync/atomic"
	"syscall"

	"github.com/passbook-log/passbook/storage"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// spliceMin is the record bytes from which a fetch response is written
// without copying them into the encoded response.
const spliceMin = 64 << 10

// sendfileMin is the bytes of a partition's records from which they are
// sent from the segment file with sendfile(2) (on a plain TCP
// connection) rather than read into memory: one system call instead of a
// read and a copy into the socket.
const sendfileMin = 16 << 10

// fetchPath is how fetch responses get their record bytes onto the
// socket.
type fetchPath int

const (
	// fetchAuto sends a partition's records of sendfileMin bytes or more
	// from the segment file with sendfile(2) when the connection is plain
	// TCP and the file system a real one (vfs.OS); otherwise it reads
	// them into memory, as fetchWritev.
	fetchAuto fetchPath = iota
	// fetchWritev reads the records into memory and writes them with the
	// rest of the response in one vectored write (spliceFetch) — what a
	// TLS connection, or a data directory on a file system without
	// descriptors, always takes.
	fetchWritev
	// fetchCopy is the path before sendfile, kept as the baseline of
	// BenchmarkFetch_ServerCPU: every batch read and its CRC checked
	// again (storage.Log.ReadBatchesVerified), then the records read into
	// a buffer grown partition by partition.
	fetchCopy
)

func (p fetchPath) String() string {
	switch p {
	case fetchAuto:
		return "sendfile"
	case fetchWritev:
		return "writev"
	case fetchCopy:
		return "copy"
	}
	return fmt.Sprintf("fetchPath(%d)", int(p))
}

// fetchIO is the server's fetch write path and its counters.
type fetchIO struct {
	path atomic.Int32 // a fetchPath: fetchAuto, but in the benchmark's baselines and tests
	// sendfileBytes counts the record bytes sent with sendfile
	// (Stats.FetchSendfileBytes).
	sendfileBytes atomic.Uint64
}

func (f *fetchIO) getPath() fetchPath  { return fetchPath(f.path.Load()) }
func (f *fetchIO) setPath(p fetchPath) { f.path.Store(int32(p)) }

// fileRecords is a partition's records left in its segment file, to be
// sent with sendfile: n bytes of file at pos. chunk pins the segment
// (against retention and the cleaner) until the response is written.
type fileRecords struct {
	out   *kmsg.FetchResponseTopicPartition
	file  *os.File
	pos   int64
	n     int64
	chunk storage.Chunk
}

// framePiece is a stretch of a response frame: bytes in memory, or n
// bytes of a segment file at pos.
type framePiece struct {
	b    []byte
	file *os.File
	pos  int64
	n    int64
}

// spliceFetch encodes a fetch response frame whose record bytes are not
// copied: the frame is the encoded response with each partition's
// records cut out, and in their place the record slices themselves or,
// for the partitions in files, the file ranges to send, for vectored
// writes and sendfile. It reports false (and encodes nothing) for a
// response with no records in files and under spliceMin bytes of
// records in memory, which is cheaper to copy.
//
// Each partition's records are swapped for a random 16-byte marker
// while kmsg encodes the rest, then found again in the encoding (in the
// order encoded) and replaced by their length prefix and the records.
func spliceFetch(corr int32, resp *kmsg.FetchResponse, flexHeader bool, files []fileRecords) ([]framePiece, bool) {
	inFile := make(map[*kmsg.FetchResponseTopicPartition]*fileRecords, len(files))
	for i := range files {
		inFile[files[i].out] = &files[i]
	}
	type cut struct {
		at    *[]byte
		saved []byte
		file  *fileRecords
	}
	var cuts []cut
	size := 0
	for i := range resp.Topics {
		for j := range resp.Topics[i].Partitions {
			p := &resp.Topics[i].Partitions[j]
			if f := inFile[p]; f != nil && p.ErrorCode == 0 { // not a topic deleted meanwhile (topicids.go)
				cuts = append(cuts, cut{at: &p.RecordBatches, saved: p.RecordBatches, file: f})
			} else if len(p.RecordBatches) > 0 {
				cuts = append(cuts, cut{at: &p.RecordBatches, saved: p.RecordBatches})
				size += len(p.RecordBatches)
			}
		}
	}
	if size < spliceMin && len(files) == 0 {
		return nil, false
	}
	markers := make([][]byte, len(cuts))
	for i, c := range cuts {
		m := make([]byte, 16)
		binary.LittleEndian.PutUint64(m, rand.Uint64())
		binary.LittleEndian.PutUint64(m[8:], rand.Uint64())
		markers[i], *c.at = m, m
	}
	enc := appendResponse(nil, corr, resp, flexHeader)
	for _, c := range cuts {
		*c.at = c.saved
	}
	prefixLen := 4 // bytes: int32 length
	if resp.IsFlexible() {
		prefixLen = 1 // compact nullable bytes: uvarint(length+1), 17 for a marker
	}
	var out []framePiece
	pos := 0
	total := int64(-4) // the size field does not count itself
	for i, m := range markers {
		at := bytes.Index(enc[pos:], m)
		if at < prefixLen {
			return nil, false // cannot happen: kmsg wrote every marker, after its length
		}
		at += pos - prefixLen
		c := cuts[i]
		n := int64(len(c.saved))
		if c.file != nil {
			n = c.file.n
		}
		var prefix []byte
		if prefixLen == 1 {
			prefix = binary.AppendUvarint(nil, uint64(n)+1)
		} else {
			prefix = binary.BigEndian.AppendUint32(nil, uint32(n))
		}
		out = append(out, framePiece{b: enc[pos:at]}, framePiece{b: prefix})
		if c.file != nil {
			out = append(out, framePiece{file: c.file.file, pos: c.file.pos, n: n})
		} else {
			out = append(out, framePiece{b: c.saved})
		}
		total += int64(at-pos+len(prefix)) + n
		pos = at + prefixLen + len(m)
	}
	out = append(out, framePiece{b: enc[pos:]})
	total += int64(len(enc) - pos)
	binary.BigEndian.PutUint32(enc, uint32(total))
	return out, true
}

// writeFrame writes the pieces of a response: the stretches in memory
// with vectored writes, the file ranges with sendfile on raw (the
// connection's descriptor; it is nil on a connection that cannot
// sendfile, which never gets file pieces), counting those in sent —
// before they go, so that a client that has read the response sees them
// counted, and taking back what an error left unsent.
func writeFrame(nc net.Conn, raw syscall.RawConn, pieces []framePiece, sent *atomic.Uint64) error {
	var bufs net.Buffers
	for _, p := range pieces {
		if p.file == nil {
			if len(p.b) > 0 {
				bufs = append(bufs, p.b)
			}
			continue
		}
		if len(bufs) > 0 {
			if _, err := bufs.WriteTo(nc); err != nil {
				return err
			}
			bufs = bufs[:0]
		}
		sent.Add(uint64(p.n))
		if n, err := sendFile(raw, p.file, p.pos, p.n); err != nil {
			sent.Add(^uint64(p.n - n - 1)) // − (p.n − n)
			return err
		}
	}
	if len(bufs) > 0 {
		if _, err := bufs.WriteTo(nc); err != nil {
			return err
		}
	}
	return nil
}

// rawConnOf returns the descriptor of a connection that can sendfile: a
// plain TCP connection, not TLS (the kernel would send the bytes
// unencrypted) and not a wrapper whose writes do more than write.
func rawConnOf(nc net.Conn) syscall.RawConn {
	tc, ok := nc.(*net.TCPConn)
	if !ok || !sendfileSupported {
		return nil
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return nil
	}
	return raw
}
