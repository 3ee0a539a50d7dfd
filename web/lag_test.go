package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/passbook-log/passbook"
)

// TestLag_OneCountEverywhere checks that every door of the server shows
// the same lag and missed records for each consumer on each partition: a
// consumer's page and its topic's lag in the HTTP API, /metrics, and the
// dashboard's stream (which the page shows as sent, counting nothing).
func TestLag_OneCountEverywhere(t *testing.T) {
	e := newEnv(t, &Options{EventInterval: 50 * time.Millisecond})
	topic, err := e.db.CreateTopic("orders", passbook.TopicConfig{Partitions: 3, SegmentBytes: 1024, RetentionBytes: 2048})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// slow committed 0 on partition 0 before retention deleted records it
	// never read, 20 of 50 on partition 1, nothing on partition 2; fast is
	// at the head of partition 0 and committed nothing elsewhere.
	if err := e.db.Offsets().Commit(ctx, offsetsKey("slow", "orders", 0), 0); err != nil {
		t.Fatal(err)
	}
	fill(t, topic, 0, 2000)
	fill(t, topic, 1, 50)
	fill(t, topic, 2, 5)
	l, _ := topic.Partition(0)
	l.Retain()
	start := l.StartOffset()
	if start == 0 {
		t.Fatal("retention deleted nothing")
	}
	e.want(e.postJSON("/api/consumers/slow/topics/orders/commit", `{"offsets": [{"partition": 1, "offset": 20}]}`), http.StatusOK, "")
	e.want(e.postJSON("/api/consumers/fast/topics/orders/commit", `{"offsets": [{"partition": 0, "offset": 2000}]}`), http.StatusOK, "")

	type standing struct{ committed, lag, missed int64 }
	want := map[string][3]standing{
		"slow": {{0, 2000 - start, start}, {20, 30, 0}, {-1, 5, 0}},
		"fast": {{2000, 0, 0}, {-1, 50, 0}, {-1, 5, 0}},
	}
	check := func(door, consumer string, p int32, got standing) {
		t.Helper()
		if w := want[consumer][p]; got != w {
			t.Errorf("%s: %s on orders/%d: committed %d, lag %d, missed %d; want committed %d, lag %d, missed %d",
				door, consumer, p, got.committed, got.lag, got.missed, w.committed, w.lag, w.missed)
		}
	}

	for consumer, parts := range want {
		var info consumerInfo
		e.get("/api/consumers/"+consumer).decode(t, &info)
		var total int64
		for _, pl := range info.Topics[0].Partitions {
			check("GET /api/consumers/"+consumer, consumer, pl.Partition, standing{pl.Committed, pl.Lag, pl.Missed})
		}
		var one consumerLagResponse
		e.get("/api/consumers/"+consumer+"/topics/orders").decode(t, &one)
		for _, pl := range one.Partitions {
			check("GET /api/consumers/"+consumer+"/topics/orders", consumer, pl.Partition, standing{pl.Committed, pl.Lag, pl.Missed})
		}
		for _, s := range parts {
			total += s.lag
		}
		if info.Lag != total || one.Lag != total {
			t.Errorf("%s's lag on orders: %d (consumer) and %d (consumer on topic), want %d", consumer, info.Lag, one.Lag, total)
		}
	}

	fams := e.scrape()
	for consumer, parts := range want {
		for p := range parts {
			labels := []string{"consumer=" + consumer, "topic=orders", fmt.Sprintf("partition=%d", p)}
			lag, _ := value(fams, "passbook_consumer_lag_records", labels...)
			missed, ok := value(fams, "passbook_consumer_missed_records", labels...)
			committed, _ := value(fams, "passbook_consumer_committed_offset", labels...)
			if !ok {
				committed = -1 // no committed or missed series where nothing is committed
			}
			check("/metrics", consumer, int32(p), standing{int64(committed), int64(lag), int64(missed)})
		}
	}

	c := e.openSSE("/api/events", nil)
	ev := c.next(t, 2*time.Second)
	var snap update
	if err := json.Unmarshal([]byte(ev.data), &snap); err != nil {
		t.Fatal(err)
	}
	if len(snap.Groups) != 2 {
		t.Fatalf("snapshot groups %s", ev.data)
	}
	for _, g := range snap.Groups {
		if len(g.Lag) != 3 || len(g.Missed) != 3 {
			t.Fatalf("%s's group in the snapshot has lag %v and missed %v: want 3 partitions", g.Consumer, g.Lag, g.Missed)
		}
		for p := range 3 {
			check("/api/events snapshot", g.Consumer, int32(p), standing{g.Committed[p], g.Lag[p], g.Missed[p]})
		}
	}

	// Five records more on partition 2: the stream sends both groups
	// again with their new lag there, though neither committed anything.
	fill(t, topic, 2, 5)
	moved := map[string]bool{}
	for len(moved) < 2 {
		var u update
		if err := json.Unmarshal([]byte(c.next(t, 2*time.Second).data), &u); err != nil {
			t.Fatal(err)
		}
		for _, g := range u.Groups {
			if g.Lag[2] == 10 {
				moved[g.Consumer] = true
			}
		}
	}
}

// TestLag_FencedPartitionCountsNoLag: a partition fenced at open has no
// extent, so no lag is counted there (it was head 0 − committed, a
// negative lag that cut the consumer's total); its committed offset is
// still shown where it is.
func TestLag_FencedPartitionCountsNoLag(t *testing.T) {
	e := fencedEnv(t, func(db *passbook.DB) {
		for p := range int32(2) {
			if err := db.Offsets().Commit(context.Background(), offsetsKey("billing", "orders", p), 50); err != nil {
				t.Fatal(err)
			}
		}
	})

	fams := e.scrape()
	e.wantMetric(fams, 50, "passbook_consumer_lag_records", "consumer=billing", "topic=orders", "partition=0")
	e.wantMetric(fams, 50, "passbook_consumer_committed_offset", "consumer=billing", "topic=orders", "partition=1")
	for _, name := range []string{"passbook_consumer_lag_records", "passbook_consumer_missed_records"} {
		if v, ok := value(fams, name, "consumer=billing", "topic=orders", "partition=1"); ok {
			t.Errorf("%s on the fenced partition: %v", name, v)
		}
	}

	var info consumerInfo
	e.get("/api/consumers/billing").decode(t, &info)
	if info.Lag != 50 || len(info.Topics) != 1 || len(info.Topics[0].Partitions) != 1 {
		t.Errorf("GET /api/consumers/billing: lag %d, %+v; want 50, partition 0 only", info.Lag, info.Topics)
	}

	var snap update
	if err := json.Unmarshal([]byte(e.openSSE("/api/events", nil).next(t, 5*time.Second).data), &snap); err != nil {
		t.Fatal(err)
	}
	if len(snap.Groups) != 1 || !slices.Equal(snap.Groups[0].Lag, []int64{50, 0}) || !slices.Equal(snap.Groups[0].Committed, []int64{50, 50}) {
		t.Errorf("the dashboard's snapshot groups %+v: want committed [50 50], lag [50 0]", snap.Groups)
	}
}
