package kafka

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/passbook-log/passbook"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestServer_MaxConnections(t *testing.T) {
	ts := startServer(t, &Options{MaxConnections: 2})
	meta := kmsg.NewPtrMetadataRequest()
	meta.Version = 4
	a, b := dialRaw(t, ts.addr), dialRaw(t, ts.addr)
	a.do(meta)
	b.do(meta)
	if c := dialRaw(t, ts.addr); !c.closedByServer() {
		t.Fatal("a third connection was kept open with MaxConnections 2")
	}
	a.nc.Close()
	// Once one closes, a new one is served.
	deadline := time.Now().Add(5 * time.Second)
	for {
		c := dialRaw(t, ts.addr)
		c.write(c.frame(meta))
		resp := kmsg.NewPtrMetadataResponse()
		resp.Version = 4
		if err := c.read(resp, false); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no connection served after one closed")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestServer_ShutdownAnswersRequestsInProgress(t *testing.T) {
	db, err := passbook.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.CreateTopic("t", passbook.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	srv, err := NewServer(db, nil)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(context.Background(), ln) }()

	// A long poll is waiting when the shutdown begins; a produce with
	// acks=all is pipelined behind it.
	rc := dialRaw(t, ln.Addr().String())
	fetch := kmsg.NewPtrFetchRequest()
	fetch.Version, fetch.MaxWaitMillis, fetch.MinBytes, fetch.MaxBytes = 11, 30_000, 1, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "t"
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes = 1 << 20
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)
	rc.write(append(rc.frame(fetch), rc.frame(produceRequest(9, -1, "t", 0, testBatch(t, 3, 10)))...))
	time.Sleep(200 * time.Millisecond)

	began := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if el := time.Since(began); el > 5*time.Second {
		t.Fatalf("shutdown took %v: the long poll was not cut short", el)
	}
	if err := <-served; err != ErrServerClosed {
		t.Fatalf("Serve returned %v", err)
	}
	// Both responses were written before the connection closed.
	rc.corr--
	fr := kmsg.NewPtrFetchResponse()
	fr.Version = 11
	if err := rc.read(fr, false); err != nil {
		t.Fatalf("fetch response: %v", err)
	}
	rc.corr++
	pr := kmsg.NewPtrProduceResponse()
	pr.Version = 9
	if err := rc.read(pr, true); err != nil {
		t.Fatalf("produce response: %v", err)
	}
	if p := pr.Topics[0].Partitions[0]; p.ErrorCode != 0 || p.BaseOffset != 0 {
		t.Fatalf("produce: %+v", p)
	}
	if !rc.closedByServer() {
		t.Fatal("connection still open after shutdown")
	}
	if _, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		t.Fatal("still accepting after shutdown")
	}
	topic, _ := db.Topic("t")
	if l, _ := topic.Partition(0); l.Head() != 3 {
		t.Fatalf("head %d, want 3", l.Head())
	}
}
