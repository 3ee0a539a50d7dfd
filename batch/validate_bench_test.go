package batch

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkValidate validates one batch of 100-byte and of 1 KiB random
// records, uncompressed and snappy-compressed, three ways in the same
// run: Check alone (the CRC: the floor any validation costs), Validate,
// and validateReference (the decoder-driven validation Validate replaced).
// Each reports records/s and the CPU time per record ("cpu-ns/record",
// from getrusage: other work on a shared machine inflates wall-clock
// figures, not this one); Validate also reports its CPU cost as a
// fraction of the reference's ("x-reference-cpu": lower is better) and
// the share of its CPU time spent past the CRC ("past-crc").
//
//	go test ./batch -run '^$' -bench Validate -benchtime 2s
func BenchmarkValidate(b *testing.B) {
	for _, shape := range []struct{ n, size int }{{1000, 100}, {100, 1 << 10}} {
		for _, c := range []Codec{None, Snappy} {
			recs := make([]Record, shape.n)
			for i := range recs {
				v := make([]byte, shape.size)
				for j := range v {
					v[j] = byte(rand.IntN(256))
				}
				recs[i] = Record{Value: v}
			}
			buf, err := Append(nil, recs, Options{Codec: c})
			if err != nil {
				b.Fatal(err)
			}
			cpu := map[string]float64{} // CPU ns per record, by way
			for _, way := range []string{"check", "reference", "validate"} {
				b.Run(fmt.Sprintf("%dx%dB/%s/%s", shape.n, shape.size, c, way), func(b *testing.B) {
					var d Decoder
					b.ReportAllocs()
					b.SetBytes(int64(len(buf)))
					cpu0 := cpuTime()
					for b.Loop() {
						var err error
						switch way {
						case "check":
							_, err = Check(buf)
						case "reference":
							_, err = d.validateReference(buf, 1<<20, false)
						case "validate":
							_, err = d.Validate(buf, 1<<20)
						}
						if err != nil {
							b.Fatal(err)
						}
					}
					records := float64(b.N) * float64(shape.n)
					b.ReportMetric(records/b.Elapsed().Seconds(), "records/s")
					perRecord := float64(cpuTime()-cpu0) / records
					if perRecord <= 0 {
						return // no CPU clock here
					}
					cpu[way] = perRecord
					b.ReportMetric(perRecord, "cpu-ns/record")
					if way == "validate" && cpu["reference"] > 0 {
						b.ReportMetric(perRecord/cpu["reference"], "x-reference-cpu")
						b.ReportMetric(1-cpu["check"]/perRecord, "past-crc")
					}
				})
			}
		}
	}
}
