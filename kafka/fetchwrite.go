package kafka

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"net"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// spliceMin is the record bytes from which a fetch response is written
// without copying them into the encoded response.
const spliceMin = 64 << 10

// spliceFetch encodes a fetch response frame whose record bytes are not
// copied: the frame is the encoded response with each partition's
// records cut out, and the record slices themselves in between, for one
// vectored write. It reports false (and encodes nothing) for a response
// with under spliceMin bytes of records, which is cheaper to copy.
//
// Each partition's records are swapped for a random 16-byte marker
// while kmsg encodes the rest, then found again in the encoding (in the
// order encoded) and replaced by their length prefix and the records.
func spliceFetch(corr int32, resp *kmsg.FetchResponse, flexHeader bool) (net.Buffers, bool) {
	var recs []*[]byte
	size := 0
	for i := range resp.Topics {
		for j := range resp.Topics[i].Partitions {
			p := &resp.Topics[i].Partitions[j]
			if len(p.RecordBatches) > 0 {
				recs = append(recs, &p.RecordBatches)
				size += len(p.RecordBatches)
			}
		}
	}
	if size < spliceMin {
		return nil, false
	}
	saved := make([][]byte, len(recs))
	markers := make([][]byte, len(recs))
	for i, r := range recs {
		saved[i] = *r
		m := make([]byte, 16)
		binary.LittleEndian.PutUint64(m, rand.Uint64())
		binary.LittleEndian.PutUint64(m[8:], rand.Uint64())
		markers[i], *r = m, m
	}
	enc := appendResponse(nil, corr, resp, flexHeader)
	for i, r := range recs {
		*r = saved[i]
	}
	prefixLen := 4 // bytes: int32 length
	if resp.IsFlexible() {
		prefixLen = 1 // compact nullable bytes: uvarint(length+1), 17 for a marker
	}
	var out net.Buffers
	pos := 0
	for i, m := range markers {
		at := bytes.Index(enc[pos:], m)
		if at < prefixLen {
			return nil, false // cannot happen: kmsg wrote every marker, after its length
		}
		at += pos - prefixLen
		var prefix []byte
		if prefixLen == 1 {
			prefix = binary.AppendUvarint(nil, uint64(len(saved[i]))+1)
		} else {
			prefix = binary.BigEndian.AppendUint32(nil, uint32(len(saved[i])))
		}
		out = append(out, enc[pos:at], prefix, saved[i])
		pos = at + prefixLen + len(m)
	}
	out = append(out, enc[pos:])
	total := -4 // the size field does not count itself
	for _, b := range out {
		total += len(b)
	}
	binary.BigEndian.PutUint32(enc, uint32(total))
	return out, true
}
