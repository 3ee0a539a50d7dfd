package kafka

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/passbook-log/passbook"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// cutProxy forwards Kafka connections to a backend broker. When told
// to, it swallows the response to a Produce request and closes the
// connection: the broker wrote the batch, and the client never hears of
// it — it must retry, not knowing whether it was written.
type cutProxy struct {
	t  *testing.T
	ln net.Listener

	mu       sync.Mutex
	backend  string
	cutEvery int // cut the response to every cutEvery-th Produce; 0 for none
	maxCuts  int
	produces int
	cuts     int
	onCut    func() // runs (on the proxy's goroutine) after each cut
}

func newCutProxy(t *testing.T) *cutProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{t: t, ln: ln}
	t.Cleanup(func() { ln.Close() })
	go p.accept()
	return p
}

func (p *cutProxy) addr() string { return p.ln.Addr().String() }

func (p *cutProxy) setBackend(addr string) {
	p.mu.Lock()
	p.backend = addr
	p.mu.Unlock()
}

func (p *cutProxy) counts() (produces, cuts int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.produces, p.cuts
}

func (p *cutProxy) accept() {
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		backend := p.backend
		p.mu.Unlock()
		broker, err := net.Dial("tcp", backend)
		if err != nil {
			client.Close() // the broker is down: the client tries again
			continue
		}
		go p.pipe(client, broker)
	}
}

// pipe forwards one connection, frame by frame.
func (p *cutProxy) pipe(client, broker net.Conn) {
	defer client.Close()
	defer broker.Close()
	var mu sync.Mutex
	produces := map[uint32]bool{} // correlation ids of Produce requests in flight
	go func() {
		defer broker.Close()
		for {
			frame, err := readFrame(client)
			if err != nil {
				return
			}
			if len(frame) >= 12 && int16(binary.BigEndian.Uint16(frame[4:])) == int16(kmsg.Produce) {
				mu.Lock()
				produces[binary.BigEndian.Uint32(frame[8:])] = true
				mu.Unlock()
			}
			if _, err := broker.Write(frame); err != nil {
				return
			}
		}
	}()
	for {
		frame, err := readFrame(broker)
		if err != nil {
			return
		}
		mu.Lock()
		corr := binary.BigEndian.Uint32(frame[4:])
		isProduce := produces[corr]
		delete(produces, corr)
		mu.Unlock()
		if isProduce && p.cut() {
			return // the response is lost with the connection
		}
		if _, err := client.Write(frame); err != nil {
			return
		}
	}
}

// cut counts a Produce response and says whether to cut it.
func (p *cutProxy) cut() bool {
	p.mu.Lock()
	p.produces++
	cut := p.cutEvery > 0 && p.produces%p.cutEvery == 0 && p.cuts < p.maxCuts
	if cut {
		p.cuts++
	}
	onCut := p.onCut
	p.mu.Unlock()
	if cut && onCut != nil {
		onCut()
	}
	return cut
}

// readFrame reads a size-prefixed frame, returning it with its size.
func readFrame(r io.Reader) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, err
	}
	frame := make([]byte, 4+binary.BigEndian.Uint32(size[:]))
	copy(frame, size[:])
	_, err := io.ReadFull(r, frame[4:])
	return frame, err
}

// produceThrough produces n records "v-00000"… through cl, twenty at a
// time (so, in many produce requests), and returns where each was
// acknowledged.
func produceThrough(cl *kgo.Client, topic string, n int) (map[string][2]int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	acked := map[string][2]int64{}
	for i := 0; i < n; i += 20 {
		var recs []*kgo.Record
		for j := i; j < min(i+20, n); j++ {
			recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(strconv.Itoa(j % 7)), Value: fmt.Appendf(nil, "v-%05d", j)})
		}
		for _, r := range cl.ProduceSync(ctx, recs...) {
			if r.Err != nil {
				return acked, fmt.Errorf("%s: %w", r.Record.Value, r.Err)
			}
			acked[string(r.Record.Value)] = [2]int64{int64(r.Record.Partition), r.Record.Offset}
		}
	}
	return acked, nil
}

// quickRetries makes a client retry after 10ms, not kgo's 250ms–2.5s.
var quickRetries = kgo.RetryBackoffFn(func(int) time.Duration { return 10 * time.Millisecond })

// quickMetadata lets a client refresh metadata 50ms after the last
// refresh (default 5s) when a broker went away.
var quickMetadata = kgo.MetadataMinAge(50 * time.Millisecond)

// stored reads every record of topic: value → where, and how many
// times each value is stored.
func stored(t *testing.T, db *passbook.DB, topic string) (map[string][2]int64, map[string]int) {
	t.Helper()
	tp, err := db.Topic(topic)
	if err != nil {
		t.Fatal(err)
	}
	at, times := map[string][2]int64{}, map[string]int{}
	for p := range int32(tp.Partitions()) {
		for rec, err := range tp.Records(p, 0) {
			if err != nil {
				t.Fatal(err)
			}
			at[string(rec.Value)] = [2]int64{int64(p), rec.Offset}
			times[string(rec.Value)]++
		}
	}
	return at, times
}

// checkExactlyOnce checks that every acknowledged record is stored once,
// where it was acknowledged, and nothing else is.
func checkExactlyOnce(t *testing.T, acked map[string][2]int64, at map[string][2]int64, times map[string]int) {
	t.Helper()
	dups := 0
	for v, k := range times {
		if k > 1 {
			dups += k - 1
		}
		if _, ok := acked[v]; !ok {
			t.Errorf("%s stored, never acknowledged", v)
		}
	}
	for v, where := range acked {
		if times[v] == 0 {
			t.Errorf("%s acknowledged at %v, not stored", v, where)
		} else if at[v] != where && times[v] == 1 {
			t.Errorf("%s acknowledged at %v, stored at %v", v, where, at[v])
		}
	}
	if dups > 0 {
		t.Errorf("%d records stored twice", dups)
	}
}

// A franz-go producer (idempotent by default) whose connection is cut
// after the broker wrote a batch and before the response arrives
// retries, and the broker recognizes the retries: every record exactly
// once, where its acknowledgement said. The same cuts without
// idempotence store duplicates, which shows the cuts land after writes.
func TestIdempotence_KgoConnectionCut(t *testing.T) {
	const n = 3000
	for _, tc := range []struct {
		name       string
		idempotent bool
	}{{"idempotent", true}, {"not idempotent", false}} {
		t.Run(tc.name, func(t *testing.T) {
			proxy := newCutProxy(t)
			ts := startServer(t, &Options{Advertise: proxy.addr()})
			proxy.setBackend(ts.addr)
			ts.createTopic(t, "once", 3)
			proxy.mu.Lock()
			proxy.cutEvery, proxy.maxCuts = 5, 12
			proxy.mu.Unlock()
			opts := []kgo.Opt{kgo.ProducerLinger(time.Millisecond), quickRetries}
			if !tc.idempotent {
				opts = append(opts, kgo.DisableIdempotentWrite())
			}
			acked, err := produceThrough(ts.client(t, opts...), "once", n)
			if err != nil {
				t.Fatal(err)
			}
			produces, cuts := proxy.counts()
			at, times := stored(t, ts.db, "once")
			if cuts < 5 {
				t.Fatalf("only %d cuts in %d produce requests", cuts, produces)
			}
			if tc.idempotent {
				checkExactlyOnce(t, acked, at, times)
				t.Logf("%d records, %d produce requests, %d responses cut: each record stored once", n, produces, cuts)
				return
			}
			dups := 0
			for _, k := range times {
				dups += k - 1
			}
			if dups == 0 {
				t.Fatalf("%d cuts and no duplicate without idempotence: the proxy did not cut after writes", cuts)
			}
			t.Logf("without idempotence the same %d cuts stored %d duplicates", cuts, dups)
		})
	}
}

// The same across broker restarts: the proxy cuts a Produce response,
// the broker process is killed with SIGKILL and started again, and the
// producer's retry reaches a broker that rebuilt the producer's state
// from the log.
func TestIdempotence_KgoBrokerKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("restarts server processes")
	}
	const n, restarts = 3000, 3
	dir := t.TempDir()
	proxy := newCutProxy(t)
	env := childAdvertiseEnv + "=" + proxy.addr()
	child, addr := startChild(t, dir, env)
	proxy.setBackend(addr)

	cut := make(chan struct{})
	proxy.mu.Lock()
	proxy.cutEvery, proxy.maxCuts = 40, restarts
	proxy.onCut = func() {
		// No new connection reaches the broker until it is restarted.
		proxy.setBackend("127.0.0.1:1")
		cut <- struct{}{}
	}
	proxy.mu.Unlock()
	cl, err := kgo.NewClient(kgo.SeedBrokers(proxy.addr()), kgo.ProducerLinger(time.Millisecond), quickRetries, quickMetadata)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	type result struct {
		acked map[string][2]int64
		err   error
	}
	done := make(chan result, 1)
	go func() {
		acked, err := produceThrough(cl, "crash", n)
		done <- result{acked, err}
	}()
	var res result
	for restarted := 0; ; {
		select {
		case <-cut:
			child.Process.Kill()
			child.Wait()
			child, addr = startChild(t, dir, env)
			proxy.setBackend(addr)
			restarted++
			continue
		case res = <-done:
		}
		break
	}
	if res.err != nil {
		t.Fatal(res.err)
	}
	acked := res.acked
	produces, cuts := proxy.counts()
	child.Process.Kill()
	child.Wait()

	db, err := passbook.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	at, times := stored(t, db, "crash")
	checkExactlyOnce(t, acked, at, times)
	if cuts != restarts {
		t.Fatalf("%d cuts, want %d", cuts, restarts)
	}
	t.Logf("%d records, %d produce requests, %d responses cut, each followed by SIGKILL and a restart of the broker: each record stored once", n, produces, cuts)
}
