package kafka

import (
	"bytes"
	"testing"

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
