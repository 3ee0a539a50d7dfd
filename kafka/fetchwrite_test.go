package kafka

import (
	"bytes"
	"os"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A spliced fetch response is byte for byte the encoded one.
func TestSpliceFetch_SameBytes(t *testing.T) {
	for _, version := range []int16{4, 11, 12} {
		resp := kmsg.NewPtrFetchResponse()
		resp.Version = version
		for ti, sizes := range [][]int{{100 << 10, 0, 3}, {70 << 10}, {0}} {
			rt := kmsg.NewFetchResponseTopic()
			rt.Topic = string(rune('a' + ti))
			for pi, n := range sizes {
				rp := kmsg.NewFetchResponseTopicPartition()
				rp.Partition = int32(pi)
				rp.HighWatermark = int64(n)
				rp.RecordBatches = bytes.Repeat([]byte{byte(n)}, n)
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		flex := resp.IsFlexible()
		want := appendResponse(nil, 7, resp, flex)
		out, ok := spliceFetch(7, resp, flex, nil)
		if !ok {
			t.Fatalf("v%d: not spliced", version)
		}
		var got []byte
		for _, p := range out {
			got = append(got, p.b...)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("v%d: spliced %d bytes differ from the %d encoded", version, len(got), len(want))
		}
		if again := appendResponse(nil, 7, resp, flex); !bytes.Equal(again, want) {
			t.Fatalf("v%d: the response was changed by splicing", version)
		}
	}
	small := kmsg.NewPtrFetchResponse()
	small.Version = 12
	if _, ok := spliceFetch(1, small, true, nil); ok {
		t.Fatal("a response without records was spliced")
	}
}

// A response with records in files is, once the file ranges are read,
// byte for byte the encoded one; a partition that failed meanwhile (its
// topic deleted) gets no bytes from its file.
func TestSpliceFetch_FilePieces(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "segment")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	stored := bytes.Repeat([]byte("0123456789abcdef"), 5000) // 80,000 bytes
	if _, err := f.Write(stored); err != nil {
		t.Fatal(err)
	}
	for _, version := range []int16{4, 12} {
		resp := kmsg.NewPtrFetchResponse()
		resp.Version = version
		rt := kmsg.NewFetchResponseTopic()
		rt.Topic = "t"
		for p := range int32(4) {
			rp := kmsg.NewFetchResponseTopicPartition()
			rp.Partition = p
			rp.RecordBatches = noRecords
			rt.Partitions = append(rt.Partitions, rp)
		}
		rt.Partitions[1].RecordBatches = []byte("in memory")
		rt.Partitions[3].ErrorCode = kerr.UnknownTopicID.Code
		resp.Topics = append(resp.Topics, rt)
		ps := resp.Topics[0].Partitions
		files := []fileRecords{
			{out: &ps[0], file: f, pos: 100, n: 30_000},
			{out: &ps[2], file: f, pos: 50_000, n: 20_000},
			{out: &ps[3], file: f, pos: 0, n: 1000},
		}
		flex := resp.IsFlexible()
		out, ok := spliceFetch(9, resp, flex, files)
		if !ok {
			t.Fatalf("v%d: not spliced", version)
		}
		var got []byte
		for _, p := range out {
			if p.file == nil {
				got = append(got, p.b...)
				continue
			}
			b := make([]byte, p.n)
			if _, err := p.file.ReadAt(b, p.pos); err != nil {
				t.Fatal(err)
			}
			got = append(got, b...)
		}
		ps[0].RecordBatches, ps[2].RecordBatches = stored[100:30_100], stored[50_000:70_000]
		want := appendResponse(nil, 9, resp, flex)
		if !bytes.Equal(got, want) {
			t.Fatalf("v%d: spliced %d bytes differ from the %d encoded", version, len(got), len(want))
		}
	}
}
