package batch_test

import (
	"fmt"
	"log"
	"time"

	"github.com/passbook-log/passbook/batch"
)

func Example() {
	at := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	recs := []batch.Record{
		{Key: []byte("user-1"), Value: []byte("signed up"), Timestamp: at},
		{Key: []byte("user-1"), Value: []byte("logged in"), Timestamp: at.Add(time.Second),
			Headers: []batch.RecordHeader{{Key: "source", Value: []byte("web")}}},
		{Key: []byte("user-2"), Value: nil, Timestamp: at.Add(2 * time.Second)}, // a tombstone
	}
	b, err := batch.Append(nil, recs, batch.Options{BaseOffset: 100, Codec: batch.Zstd})
	if err != nil {
		log.Fatal(err)
	}

	// A broker validates what it receives before storing it.
	var d batch.Decoder
	h, err := d.Validate(b, 1<<20)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d records, offsets %d-%d, %s\n", h.RecordCount, h.BaseOffset, h.LastOffset(), h.Codec())

	for r, err := range d.Records(b) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%d %s %s=%q tombstone=%t headers=%d\n",
			r.Offset, r.Timestamp.UTC().Format(time.TimeOnly), r.Key, r.Value, r.Tombstone(), len(r.Headers))
	}
	// Output:
	// 3 records, offsets 100-102, zstd
	// 100 03:04:05 user-1="signed up" tombstone=false headers=0
	// 101 03:04:06 user-1="logged in" tombstone=false headers=1
	// 102 03:04:07 user-2="" tombstone=true headers=0
}
