package kafka

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/passbook-log/passbook/batch"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The pool's memory is the budget's: what requests hold plus what idle
// buffers hold never passes the limit, idle buffers stay under their cap,
// a request that needs the budget takes the idle buffers' share before
// it waits, and a buffer given back while a request waits is dropped.
func TestFramePool_Budget(t *testing.T) {
	const limit = 256 << 10
	b := newByteBudget(limit)
	p := newFramePool(b)
	ctx := context.Background()
	get := func(n int) []byte {
		t.Helper()
		if buf := p.take(n); buf != nil {
			return buf
		}
		size := frameSize(n)
		if err := p.acquire(ctx, time.Now().Add(time.Minute), int64(size)); err != nil {
			t.Fatal(err)
		}
		return make([]byte, 0, size)
	}
	check := func(wantInFlight, wantIdle int64) {
		t.Helper()
		inFlight, idle := p.usage()
		if inFlight != wantInFlight || idle != wantIdle {
			t.Fatalf("in flight %d, idle %d; want %d, %d", inFlight, idle, wantInFlight, wantIdle)
		}
		if inFlight+idle > max(limit, inFlight) {
			t.Fatalf("in flight %d + idle %d is over the limit %d", inFlight, idle, limit)
		}
	}

	// A buffer given back is taken again by the next request of its class.
	a := get(10_000)
	if cap(a) != frameSize(10_000) || frameSize(10_000) != 10<<10 {
		t.Fatalf("a 10,000-byte request got %d bytes; its class is %d", cap(a), frameSize(10_000))
	}
	check(10<<10, 0)
	p.put(a)
	check(0, 10<<10)
	if again := p.take(9_000); cap(again) != 10<<10 {
		t.Fatalf("a 9,000-byte request took a %d-byte buffer, want the idle 10 KiB one", cap(again))
	} else {
		check(10<<10, 0)
		p.put(again)
	}
	if other := p.take(20_000); other != nil {
		t.Fatalf("a 20,000-byte request took a %d-byte buffer of another class", cap(other))
	}

	// Idle buffers stay under a quarter of the budget: the rest is
	// dropped as it is given back.
	var held [][]byte
	for range 8 {
		held = append(held, get(16<<10))
	}
	for _, h := range held {
		p.put(h)
	}
	_, idle := p.usage()
	if idle > limit/4 {
		t.Fatalf("%d bytes idle, over a quarter of the budget %d", idle, limit)
	}
	check(0, idle)

	// A request for all of the budget takes the idle buffers' share.
	all := get(limit)
	check(int64(cap(all)), 0)

	// One waiting for budget: a buffer given back meanwhile is dropped,
	// not kept, and the waiter goes on.
	p.put(all)
	small := get(4 << 10)
	big := get(200 << 10) // 4 KiB + 200 KiB of 256
	got := make(chan error, 1)
	go func() { got <- p.acquire(ctx, time.Now().Add(time.Minute), 100<<10) }()
	for p.waiting.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	p.put(big)
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	check(4<<10+100<<10, 0)
	p.put(small)
	b.release(100 << 10)
	if _, idle := p.usage(); idle != 4<<10 {
		t.Fatalf("idle %d, want the 4 KiB buffer given back once nobody waits", idle)
	}

	// A request over the whole budget goes through once nothing else is
	// held, idle buffers dropped; past the largest class nothing is kept.
	huge := get(framePoolMaxBuffer + 1)
	check(framePoolMaxBuffer+1, 0)
	p.put(huge)
	check(0, 0)
}

// poolValue is the value of record seq of producer id: a header naming
// both, then bytes only they determine, of a length that spans many
// buffer classes.
func poolValue(id, seq int) []byte {
	r := rand.New(rand.NewPCG(uint64(id), uint64(seq)))
	n := 1 + r.IntN(3<<10)
	if seq%50 == 0 {
		n = 20<<10 + r.IntN(60<<10) // now and then a large one
	}
	v := fmt.Appendf(nil, "%d/%d:", id, seq)
	for range n {
		v = append(v, byte(r.Uint32()))
	}
	return v
}

// Pooled request buffers never leak one request's bytes into another's:
// producers of every kind — plain ones with many requests in flight on
// a connection, idempotent, transactional — send records of sizes that
// cross buffer classes, all at once on their own connections, and every
// record read back from the log is exactly one that was sent, and every
// one sent is there. (Run with -race: a buffer reused while a handler
// still reads it is a data race too.)
func TestProduce_PooledBuffers_DataIntact(t *testing.T) {
	ts := startServer(t, nil)
	const parts = 3
	topic := ts.createTopic(t, "pooled", parts)
	type producer struct {
		name string
		opts []kgo.Opt
		txn  bool
		once bool // each record stored exactly once (else at least once: a plain producer may retry)
	}
	producers := []producer{
		{"pipelined acks=1", []kgo.Opt{kgo.DisableIdempotentWrite(), kgo.RequiredAcks(kgo.LeaderAck()), kgo.MaxProduceRequestsInflightPerBroker(8), kgo.ProducerLinger(0)}, false, false},
		{"pipelined acks=all", []kgo.Opt{kgo.DisableIdempotentWrite(), kgo.MaxProduceRequestsInflightPerBroker(8), kgo.ProducerLinger(0), kgo.ProducerBatchCompression(kgo.NoCompression())}, false, false},
		{"idempotent", []kgo.Opt{kgo.ProducerLinger(time.Millisecond)}, false, true},
		{"transactional", []kgo.Opt{kgo.TransactionalID("pool-txn"), kgo.TransactionTimeout(time.Minute)}, true, true},
	}
	const perProducer = 1500
	var wg sync.WaitGroup
	for id, pr := range producers {
		cl := ts.client(t, append([]kgo.Opt{kgo.DefaultProduceTopic("pooled"), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchMaxBytes(128 << 10), kgo.MaxBufferedRecords(500)}, pr.opts...)...)
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			for start := 0; start < perProducer; start += 100 {
				if pr.txn {
					if err := cl.BeginTransaction(); err != nil {
						t.Errorf("%s: begin: %v", pr.name, err)
						return
					}
				}
				var sent sync.WaitGroup
				for seq := start; seq < start+100; seq++ {
					sent.Add(1)
					cl.Produce(ctx, &kgo.Record{Partition: int32(seq % parts), Value: poolValue(id, seq)}, func(_ *kgo.Record, err error) {
						if err != nil {
							t.Errorf("%s: record %d: %v", pr.name, seq, err)
						}
						sent.Done()
					})
				}
				sent.Wait()
				if pr.txn {
					if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
						t.Errorf("%s: commit: %v", pr.name, err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	if st := ts.srv.Stats(); st.RequestBytesPooled == 0 {
		t.Errorf("no request buffer was kept for reuse (stats %+v): the test did not exercise the pool", st)
	}

	seen := make([]map[int]int, len(producers))
	for i := range seen {
		seen[i] = map[int]int{}
	}
	for p := range int32(parts) {
		l, err := topic.Partition(p)
		if err != nil {
			t.Fatal(err)
		}
		r := l.NewReader(l.StartOffset())
		for {
			rec, ok, err := r.TryNext()
			if err != nil {
				t.Fatalf("partition %d: %v", p, err)
			}
			if !ok {
				break
			}
			var id, seq int
			if _, err := fmt.Sscanf(string(rec.Value), "%d/%d:", &id, &seq); err != nil || id < 0 || id >= len(producers) {
				t.Fatalf("partition %d offset %d: a record no producer sent: %.40q", p, rec.Offset, rec.Value)
			}
			if want := poolValue(id, seq); string(rec.Value) != string(want) {
				t.Fatalf("partition %d offset %d: record %d of %s is %d bytes (fnv %x), sent %d bytes (fnv %x)",
					p, rec.Offset, seq, producers[id].name, len(rec.Value), fnvOf(rec.Value), len(want), fnvOf(want))
			}
			if int32(seq%parts) != p {
				t.Fatalf("record %d of %s is in partition %d, sent to %d", seq, producers[id].name, p, seq%parts)
			}
			seen[id][seq]++
		}
		r.Close()
	}
	for id, pr := range producers {
		for seq := range perProducer {
			if n := seen[id][seq]; n == 0 || (n > 1 && pr.once) {
				t.Errorf("%s: record %d stored %d times", pr.name, seq, n)
			}
		}
	}
}

func fnvOf(b []byte) uint64 {
	h := fnv.New64a()
	h.Write(b)
	return h.Sum64()
}

// Requests pipelined on one connection — written back to back before any
// response is read, each in a buffer the one before may have used — are
// answered in order, each with its own offsets, and the log holds each
// request's batch exactly as sent.
func TestProduce_PipelinedRequestsKeepTheirBytes(t *testing.T) {
	ts := startServer(t, nil)
	topic := ts.createTopic(t, "pipelined", 2)
	rc := dialRaw(t, ts.addr)
	const n = 60
	batches := make([][]byte, n)
	var out []byte
	for i := range n {
		recs := make([]batch.Record, 1+i%7)
		for j := range recs {
			recs[j] = batch.Record{Key: fmt.Appendf(nil, "req-%d-%d", i, j), Value: poolValue(100+i, j)}
		}
		b, err := batch.Append(nil, recs, batch.Options{})
		if err != nil {
			t.Fatal(err)
		}
		batches[i] = b
		acks := int16(1)
		if i%3 == 0 {
			acks = -1
		}
		out = append(out, rc.frame(produceRequest(9, acks, "pipelined", int32(i%2), b))...)
	}
	rc.write(out)
	next := [2]int64{}
	for i := range n {
		resp := kmsg.NewPtrProduceResponse()
		resp.Version = 9
		if err := readInOrder(rc, resp, int32(i+1), true); err != nil {
			t.Fatalf("response %d: %v", i, err)
		}
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != 0 {
			t.Fatalf("request %d: error code %d (%v)", i, p.ErrorCode, p.ErrorMessage)
		}
		if part := i % 2; p.BaseOffset != next[part] {
			t.Fatalf("request %d: base offset %d, want %d", i, p.BaseOffset, next[part])
		}
		next[i%2] += int64(1 + i%7)
	}
	for part := range int32(2) {
		l, err := topic.Partition(part)
		if err != nil {
			t.Fatal(err)
		}
		r := l.NewReader(0)
		for i := int(part); i < n; i += 2 {
			for j := range 1 + i%7 {
				rec, ok, err := r.TryNext()
				if err != nil || !ok {
					t.Fatalf("partition %d: record %d of request %d: ok %v, %v", part, j, i, ok, err)
				}
				if string(rec.Key) != fmt.Sprintf("req-%d-%d", i, j) || string(rec.Value) != string(poolValue(100+i, j)) {
					t.Fatalf("partition %d offset %d: key %q, value of %d bytes: not record %d of request %d as sent", part, rec.Offset, rec.Key, len(rec.Value), j, i)
				}
			}
		}
		r.Close()
	}
}

// readInOrder reads the next response frame, which must answer request
// corr.
func readInOrder(r *rawConn, resp kmsg.Response, corr int32, flexHeader bool) error {
	r.nc.SetReadDeadline(time.Now().Add(20 * time.Second))
	b, err := readFull(r, 4)
	if err != nil {
		return err
	}
	b, err = readFull(r, int(binary.BigEndian.Uint32(b)))
	if err != nil {
		return err
	}
	if got := int32(binary.BigEndian.Uint32(b)); got != corr {
		return fmt.Errorf("response for request %d, want %d", got, corr)
	}
	b = b[4:]
	if flexHeader {
		if b, err = skipTags(b); err != nil {
			return err
		}
	}
	return resp.ReadFrom(b)
}

func readFull(r *rawConn, n int) ([]byte, error) {
	b := make([]byte, n)
	for got := 0; got < n; {
		k, err := r.nc.Read(b[got:])
		got += k
		if err != nil && got < n {
			return nil, err
		}
	}
	return b, nil
}

// Idle request buffers never make a request wait: with the budget
// taken by a request being read and by idle buffers, a request that
// needs the rest takes the idle buffers' share and is answered, and
// nothing ever holds more than queued.max.request.bytes.
func TestLimits_PooledBuffersYieldToRequests(t *testing.T) {
	const limit = 128 << 10
	ts := startServer(t, &Options{SocketRequestMaxBytes: limit, QueuedMaxRequestBytes: limit})
	ts.createTopic(t, "q", 1)
	a, b := dialRaw(t, ts.addr), dialRaw(t, ts.addr)
	answered := func(c *rawConn) {
		t.Helper()
		resp := kmsg.NewPtrProduceResponse()
		resp.Version = 7
		if err := readInOrder(c, resp, c.corr, false); err != nil {
			t.Fatal(err)
		}
		if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
			t.Fatalf("produce error code %d", code)
		}
	}
	// Requests of a few sizes leave buffers idle.
	for _, size := range []int{2 << 10, 6 << 10, 12 << 10, 24 << 10} {
		a.write(a.frame(produceRequest(7, 1, "q", 0, testBatch(t, 1, size))))
		answered(a)
	}
	st := ts.srv.Stats()
	if st.RequestBytesPooled == 0 || st.RequestBytesPooled > limit/4 {
		t.Fatalf("%d bytes of idle buffers, want some and at most a quarter of %d", st.RequestBytesPooled, limit)
	}
	if got := metricValue(t, ts.srv, "passbook_kafka_request_bytes_pooled"); got != float64(st.RequestBytesPooled) {
		t.Fatalf("passbook_kafka_request_bytes_pooled = %v, Stats says %d", got, st.RequestBytesPooled)
	}
	// a holds most of what is left with a request it has not finished.
	big := a.frame(produceRequest(7, 1, "q", 0, testBatch(t, 1, 64<<10)))
	a.write(big[:len(big)-1])
	waitFor(t, func() bool { return ts.srv.Stats().RequestBytesInFlight >= int64(len(big)-4) })
	// b needs more than the budget has free unless the idle buffers go.
	b.write(b.frame(produceRequest(7, 1, "q", 0, testBatch(t, 1, 40<<10))))
	answered(b)
	if st := ts.srv.Stats(); st.RequestBytesInFlight+st.RequestBytesPooled > limit {
		t.Fatalf("%d bytes in flight and %d idle, over queued.max.request.bytes %d", st.RequestBytesInFlight, st.RequestBytesPooled, limit)
	}
	a.write(big[len(big)-1:])
	answered(a)
	waitFor(t, func() bool { return ts.srv.Stats().RequestBytesInFlight == 0 })
}
