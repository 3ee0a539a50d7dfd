package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/passbook-log/passbook"
)

// TestServe_Kill9_ManyPartitions: `passbook serve` over a data directory
// of 250 partitions (one topic of 200, fifty of one; Open opens them
// several at a time) is stopped, round after round, by SIGKILL in the
// middle of acks=all produces to every partition, or by SIGTERM (after
// which the next Open finds every partition clean and skips their
// syncs); it restarts each time, and at the end every acknowledged record
// is in its partition at the offset its acknowledgment gave.
func TestServe_Kill9_ManyPartitions(t *testing.T) {
	if testing.Short() {
		t.Skip("five serve processes over 250 partitions: the default tier, not -short")
	}
	dir := t.TempDir()
	db, err := passbook.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	type target struct {
		topic string
		part  int32
	}
	var targets []target
	if _, err := db.CreateTopic("wide", passbook.TopicConfig{Partitions: 200}); err != nil {
		t.Fatal(err)
	}
	for p := range int32(200) {
		targets = append(targets, target{"wide", p})
	}
	for i := range 50 {
		name := fmt.Sprintf("n%02d", i)
		if _, err := db.CreateTopic(name, passbook.TopicConfig{Partitions: 1}); err != nil {
			t.Fatal(err)
		}
		targets = append(targets, target{name, 0})
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	type acked struct {
		offset int64
		value  string
	}
	var mu sync.Mutex
	got := map[target][]acked{}
	total := 0
	for round, kill := range []bool{true, false, true, false, true} {
		began := time.Now()
		p, stop, took := launchServe(t, dir, 60*time.Second, 15*time.Second)
		t.Logf("round %d: serve listened after %s", round, took.Round(time.Millisecond))
		cl, err := kgo.NewClient(kgo.SeedBrokers(p.kafkaAddr), kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordDeliveryTimeout(10*time.Second), kgo.ProducerLinger(time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		want := 1000 + rng.IntN(2000) // acknowledgments before the stop
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		var wg sync.WaitGroup
		enough := make(chan struct{})
		var once sync.Once
		n := 0
		for i := 0; ; i++ {
			select {
			case <-enough:
			case <-ctx.Done():
				t.Fatalf("round %d: only %d records acknowledged in a minute", round, n)
			default:
				w := targets[rng.IntN(len(targets))]
				v := fmt.Sprintf("r%d-%d", round, i)
				wg.Add(1)
				cl.Produce(ctx, &kgo.Record{Topic: w.topic, Partition: w.part, Value: []byte(v)}, func(r *kgo.Record, err error) {
					defer wg.Done()
					if err != nil {
						return // not acknowledged: the server went away
					}
					mu.Lock()
					got[w] = append(got[w], acked{r.Offset, v})
					n++
					if n >= want {
						once.Do(func() { close(enough) })
					}
					mu.Unlock()
				})
				if i%200 == 199 {
					time.Sleep(time.Millisecond) // let acknowledgments come back
				}
				continue
			}
			break
		}
		produced := time.Since(began)
		if kill {
			// SIGKILL, of this test's own child only, with produces in flight.
			if err := syscall.Kill(p.pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
		}
		stop() // SIGTERM (a clean stop), or reaps the killed process
		cl.Close()
		wg.Wait()
		cancel()
		mu.Lock()
		t.Logf("round %d: %d acknowledged, then %s (%s producing, %s in all)", round, n, map[bool]string{true: "SIGKILL", false: "SIGTERM"}[kill],
			produced.Round(time.Millisecond), time.Since(began).Round(time.Millisecond))
		total += n
		mu.Unlock()
	}

	db, err = passbook.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	checked := 0
	for w, recs := range got {
		tp, err := db.Topic(w.topic)
		if err != nil {
			t.Fatal(err)
		}
		stored := map[int64]string{}
		for rec, err := range tp.Records(w.part, 0) {
			if err != nil {
				t.Fatalf("%s/%d: %v", w.topic, w.part, err)
			}
			stored[rec.Offset] = string(rec.Value)
		}
		for _, a := range recs {
			if stored[a.offset] != a.value {
				t.Errorf("%s/%d: acknowledged %q at offset %d, stored %q", w.topic, w.part, a.value, a.offset, stored[a.offset])
			}
			checked++
		}
	}
	if checked != total || total == 0 {
		t.Fatalf("checked %d of %d acknowledged records", checked, total)
	}
	t.Logf("%d acknowledged records over %d partitions, all there", total, len(got))
}
