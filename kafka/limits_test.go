package kafka

import (
	"context"
	"encoding/binary"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestOptions_Validate_Limits(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    Options
		want string // in the error; "" for valid
	}{
		{"zero is the defaults", Options{}, ""},
		{"queued bytes at the request limit", Options{SocketRequestMaxBytes: 1 << 20, QueuedMaxRequestBytes: 1 << 20}, ""},
		{"queued bytes under the request limit", Options{SocketRequestMaxBytes: 1 << 20, QueuedMaxRequestBytes: 1 << 19}, "queued.max.request.bytes 524,288 is under socket.request.max.bytes 1,048,576"},
		{"queued bytes under the default request limit", Options{QueuedMaxRequestBytes: 1 << 20}, "is under socket.request.max.bytes 104,857,600"},
		{"negative request size", Options{SocketRequestMaxBytes: -1}, "socket.request.max.bytes -1 is negative"},
		{"negative idle", Options{ConnectionsMaxIdle: -time.Second}, "connections.max.idle -1s is negative"},
		{"negative request timeout", Options{RequestTimeout: -time.Second}, "request timeout -1s is negative"},
		{"negative per-ip", Options{MaxConnectionsPerIP: -1}, "max.connections.per.ip -1 is negative"},
		{"fetch.max.bytes under Kafka's minimum", Options{FetchMaxBytes: 1000}, "fetch.max.bytes 1,000 is under 1,024"},
		{"negative response budget", Options{QueuedMaxResponseBytes: -1}, "queued.max.response.bytes -1 is negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.o.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Validate: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Validate: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestByteBudget(t *testing.T) {
	b := newByteBudget(100)
	ctx := context.Background()
	if err := b.acquire(ctx, 60); err != nil {
		t.Fatal(err)
	}
	if b.tryAcquire(50) {
		t.Fatal("tryAcquire(50) with 60 of 100 held: took it")
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := b.acquire(short, 50); err == nil {
		t.Fatal("acquire(50) with 60 of 100 held did not wait")
	}
	got := make(chan error, 1)
	go func() { got <- b.acquire(ctx, 50) }()
	b.release(60)
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	b.release(50)
	// More than the whole budget goes through when nothing is held.
	if !b.tryAcquire(500) {
		t.Fatal("tryAcquire(500) of an empty budget of 100 refused")
	}
	b.release(500)
	if got := b.inUse(); got != 0 {
		t.Fatalf("in use %d after every release", got)
	}
	if got := b.waits.Load(); got < 2 {
		t.Fatalf("waits %d, want at least 2", got)
	}
}

// A request's memory grows with the bytes that arrive: a frame declaring
// 1 MiB of which 10 bytes came holds a few KiB of the budget.
func TestLimits_RequestMemoryGrowsAsBytesArrive(t *testing.T) {
	ts := startServer(t, nil)
	r := dialRaw(t, ts.addr)
	r.write(append(binary.BigEndian.AppendUint32(nil, 1<<20), make([]byte, 10)...))
	deadline := time.Now().Add(5 * time.Second)
	for ts.srv.Stats().RequestBytesInFlight == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the partial request holds nothing of the budget")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := ts.srv.Stats().RequestBytesInFlight; got > 8<<10 {
		t.Fatalf("a 1 MiB request of which 10 bytes came holds %d bytes", got)
	}
}

// At queued.max.request.bytes, connections stop reading (they wait)
// instead of allocating, and go on once memory is given back.
func TestLimits_QueuedMaxRequestBytes_Waits(t *testing.T) {
	const limit = 64 << 10
	ts := startServer(t, &Options{SocketRequestMaxBytes: limit, QueuedMaxRequestBytes: limit})
	ts.createTopic(t, "q", 1)
	big := testBatch(t, 1, 40<<10)
	a, b := dialRaw(t, ts.addr), dialRaw(t, ts.addr)
	fa, fb := a.frame(produceRequest(7, 1, "q", 0, big)), b.frame(produceRequest(7, 1, "q", 0, big))
	// a sends all but the last byte: its buffer has grown to hold the
	// whole frame (rounded up to a buffer size class, framepool.go),
	// most of the budget; b's, doubling from 4 KiB, cannot grow past
	// 16 KiB.
	a.write(fa[:len(fa)-1])
	waitFor(t, func() bool { return ts.srv.Stats().RequestBytesInFlight == int64(frameSize(len(fa)-4)) })
	b.write(fb)
	waitFor(t, func() bool { return ts.srv.Stats().RequestBytesWaits >= 1 })
	if got := ts.srv.Stats().RequestBytesInFlight; got > limit {
		t.Fatalf("%d bytes in flight, over queued.max.request.bytes %d", got, limit)
	}
	a.write(fa[len(fa)-1:])
	for _, c := range []*rawConn{a, b} {
		resp := kmsg.NewPtrProduceResponse()
		resp.Version = 7
		if err := c.read(resp, false); err != nil {
			t.Fatal(err)
		}
		if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
			t.Fatalf("produce error code %d", code)
		}
	}
	waitFor(t, func() bool { return ts.srv.Stats().RequestBytesInFlight == 0 })
}

func TestLimits_ConnectionsMaxIdle(t *testing.T) {
	ts := startServer(t, &Options{ConnectionsMaxIdle: 300 * time.Millisecond})
	meta := kmsg.NewPtrMetadataRequest()
	meta.Version = 4
	busy, idle := dialRaw(t, ts.addr), dialRaw(t, ts.addr)
	idle.do(meta)
	stop := time.Now().Add(time.Second)
	for time.Now().Before(stop) {
		busy.do(meta) // active: kept open
		time.Sleep(50 * time.Millisecond)
	}
	if !idle.closedByServer() {
		t.Fatal("an idle connection was kept open")
	}
	busy.do(meta)
	if got := ts.srv.Stats().Closed[closeIdle]; got != 1 {
		t.Fatalf("closed for idleness: %d, want 1", got)
	}
}

func TestLimits_SocketRequestMaxBytes(t *testing.T) {
	ts := startServer(t, &Options{SocketRequestMaxBytes: 1 << 20})
	r := dialRaw(t, ts.addr)
	r.write(binary.BigEndian.AppendUint32(nil, 1<<20+1))
	if !r.closedByServer() {
		t.Fatal("a frame over socket.request.max.bytes was kept open")
	}
	waitFor(t, func() bool { return ts.srv.Stats().Closed[closeTooLarge] == 1 })
}

// A fetch asking for 2 GiB gets at most fetch.max.bytes, but always a
// whole first batch, however large.
func TestLimits_FetchMaxBytes(t *testing.T) {
	ts := startServer(t, &Options{FetchMaxBytes: 16 << 10})
	ts.createTopic(t, "f", 1)
	r := dialRaw(t, ts.addr)
	for _, size := range []int{40 << 10, 4 << 10, 4 << 10, 4 << 10, 4 << 10, 4 << 10, 4 << 10} {
		resp := r.do(produceRequest(7, 1, "f", 0, testBatch(t, 1, size))).(*kmsg.ProduceResponse)
		if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
			t.Fatalf("produce error code %d", code)
		}
	}
	fetchFrom := func(offset int64) []byte {
		req := kmsg.NewPtrFetchRequest()
		req.Version = 11
		req.ReplicaID = -1
		req.MaxBytes = math.MaxInt32
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = "f"
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.FetchOffset = offset
		rp.PartitionMaxBytes = math.MaxInt32
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp := r.do(req).(*kmsg.FetchResponse)
		return resp.Topics[0].Partitions[0].RecordBatches
	}
	if got := len(fetchFrom(0)); got < 40<<10 || got > 41<<10 {
		t.Errorf("fetch from 0: %d bytes, want the one 40 KiB batch, whole", got)
	}
	if got := len(fetchFrom(1)); got == 0 || got > 16<<10 {
		t.Errorf("fetch from 1: %d bytes, want some, at most fetch.max.bytes 16,384", got)
	}
	if got := ts.srv.Stats().FetchesCapped; got != 2 {
		t.Errorf("fetches capped: %d, want 2", got)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached within 10 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
