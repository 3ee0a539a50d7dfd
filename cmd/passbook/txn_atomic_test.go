package main

import (
	"context"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Never half a transaction: a producer commits transactions of one
// record on each of 16 partitions while the broker is SIGKILLed eight
// times, at random moments and within 4 ms of a commit being sent — in
// the middle of a transaction, of its commit, between two partitions'
// markers. Afterwards every transaction
// is on all 16 partitions for a read_committed reader or on none, and
// every commit the producer was told succeeded is there.
func TestTxn_BrokerKilledNeverHalf(t *testing.T) {
	if testing.Short() {
		t.Skip("kills processes: not in -short")
	}
	const partitions = 16
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	b := newETLBroker(t)
	ctx := context.Background()
	admin := b.client(t)
	if _, err := kadm.NewClient(admin).CreateTopic(ctx, partitions, 1, nil, "atomic"); err != nil {
		t.Fatal(err)
	}
	admin.Close()

	var (
		mu        sync.Mutex
		acked     []int // transactions whose commit was answered without error
		attempted int
	)
	stop := make(chan struct{})
	done := make(chan struct{})
	committing := make(chan struct{}, 1) // a commit is being sent
	go func() {
		defer close(done)
		newProducer := func() *kgo.Client {
			cl, err := kgo.NewClient(kgo.SeedBrokers(b.addr), kgo.TransactionalID("atomic"), kgo.TransactionTimeout(20*time.Second),
				kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
			if err != nil {
				panic(err)
			}
			return cl
		}
		cl := newProducer()
		defer func() { cl.Close() }()
		for seq := 0; ; seq++ {
			select {
			case <-stop:
				return
			default:
			}
			mu.Lock()
			attempted = seq + 1
			mu.Unlock()
			tctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			err := cl.BeginTransaction()
			if err == nil {
				recs := make([]*kgo.Record, partitions)
				for p := range recs {
					recs[p] = &kgo.Record{Topic: "atomic", Partition: int32(p), Value: []byte(strconv.Itoa(seq))}
				}
				err = cl.ProduceSync(tctx, recs...).FirstErr()
			}
			if err == nil {
				select {
				case committing <- struct{}{}:
				default:
				}
				err = cl.EndTransaction(tctx, kgo.TryCommit)
				if err == nil {
					mu.Lock()
					acked = append(acked, seq)
					mu.Unlock()
				}
			}
			if err != nil {
				// Whatever the broker made of it, this transaction may
				// not commit any more: abort it, and start over with a
				// new producer (its InitProducerID aborts anything left).
				t.Logf("transaction %d: %v", seq, err)
				cl.EndTransaction(tctx, kgo.TryAbort)
				cl.Close()
				cl = newProducer()
			}
			cancel()
		}
	}()
	for i := range 8 {
		if i%2 == 0 {
			// Anywhere.
			time.Sleep(time.Duration(50+rng.IntN(400)) * time.Millisecond)
		} else {
			// Just after a commit is sent: in PrepareCommit, between
			// markers, or just after.
			select {
			case <-committing:
			default:
			}
			select {
			case <-committing:
			case <-time.After(time.Minute):
				t.Fatalf("no commit sent for a minute (kill %d)", i)
			}
			time.Sleep(time.Duration(rng.IntN(4000)) * time.Microsecond)
		}
		began := time.Now()
		b.kill(t)
		b.start(t)
		mu.Lock()
		t.Logf("kill %d: restarted in %v; %d acknowledged", i, time.Since(began).Round(time.Millisecond), len(acked))
		mu.Unlock()
	}
	// Some transactions after the last restart, then stop.
	mu.Lock()
	from := len(acked)
	mu.Unlock()
	for deadline := time.Now().Add(time.Minute); ; {
		mu.Lock()
		n, tried := len(acked), attempted
		mu.Unlock()
		if n >= from+3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no commit for a minute after the last restart: %d acknowledged, %d attempted\n%s", n, tried, b.stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	close(stop)
	<-done

	// Hung transactions (the producer was told nothing) end by their
	// timeout; then nothing is open.
	cl := b.client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	adm := kadm.NewClient(cl)
	for deadline := time.Now().Add(time.Minute); ; {
		open, err := adm.ListTransactions(ctx, nil, []string{"Ongoing", "PrepareCommit", "PrepareAbort"})
		if err == nil && len(open) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("transactions still open after a minute: %v %v", open, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for p := range int32(partitions) {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "atomic", Partition: p, Value: []byte("END")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	cl.Close()

	r := b.client(t, kgo.ConsumeTopics("atomic"), kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	defer r.Close()
	rctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	onParts := map[string]map[int32]int{}
	ended := map[int32]bool{}
	for len(ended) < partitions {
		fs := r.PollFetches(rctx)
		if err := rctx.Err(); err != nil {
			t.Fatalf("reading: %v (ended %v)", err, ended)
		}
		fs.EachRecord(func(rec *kgo.Record) {
			v := string(rec.Value)
			if v == "END" {
				ended[rec.Partition] = true
				return
			}
			if onParts[v] == nil {
				onParts[v] = map[int32]int{}
			}
			onParts[v][rec.Partition]++
		})
	}
	half := 0
	for v, ps := range onParts {
		dup := false
		for _, n := range ps {
			dup = dup || n != 1
		}
		if len(ps) != partitions || dup {
			half++
			t.Errorf("transaction %s: read_committed sees it on %d of %d partitions %v", v, len(ps), partitions, ps)
		}
	}
	for _, seq := range acked {
		if len(onParts[strconv.Itoa(seq)]) != partitions {
			t.Errorf("transaction %d was acknowledged committed and is not there", seq)
		}
	}
	if len(acked) == 0 {
		t.Fatal("no transaction committed: the test did not test")
	}
	t.Logf("%d transactions attempted, %d acknowledged, %d visible read_committed, %d half", attempted, len(acked), len(onParts), half)
}
