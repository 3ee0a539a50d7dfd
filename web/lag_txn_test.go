package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/passbook-log/passbook/batch"
	"github.com/passbook-log/passbook/consumer"
	"github.com/passbook-log/passbook/storage"
)

// TestConsumers_LagCountsToLastStableOffset: with a transaction open,
// both lag endpoints and the dashboard count a consumer's lag up to the
// last stable offset (what a read_committed consumer can read), not the
// head, and agree with consumer.Lag.
func TestConsumers_LagCountsToLastStableOffset(t *testing.T) {
	e := newEnv(t, nil)
	topic := e.createTopic("orders", 1)
	fill(t, topic, 0, 10)
	l, err := topic.Partition(0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := batch.Append(nil, []batch.Record{{Value: []byte("open")}, {Value: []byte("open")}}, batch.Options{Idempotent: true, ProducerID: 9})
	if err != nil {
		t.Fatal(err)
	}
	batch.SetTransactional(b)
	if _, err := l.AppendBatch(b, storage.InOS); err != nil { // offsets 10, 11: the LSO stays at 10
		t.Fatal(err)
	}
	fill(t, topic, 0, 3) // 12–14, past the LSO too
	e.want(e.postJSON("/api/consumers/c/topics/orders/commit", `{"offsets": [{"partition": 0, "offset": 4}]}`), http.StatusOK, "")

	want, err := consumer.Lag(context.Background(), e.db.Offsets(), topic, "c")
	if err != nil {
		t.Fatal(err)
	}
	if want[0].Lag != 6 || want[0].Stable != 10 || want[0].Head != 15 {
		t.Fatalf("consumer.Lag: %+v, want lag 6 up to the LSO 10, head 15", want[0])
	}
	var info consumerInfo
	r := e.get("/api/consumers/c")
	e.want(r, http.StatusOK, "")
	r.decode(t, &info)
	if ps := info.Topics[0].Partitions; len(ps) != 1 || ps[0] != want[0] {
		t.Errorf("/api/consumers/c partitions %+v, want %+v", ps, want)
	}
	var lag consumerLagResponse
	r = e.get("/api/consumers/c/topics/orders")
	e.want(r, http.StatusOK, "")
	r.decode(t, &lag)
	if lag.Lag != 6 || len(lag.Partitions) != 1 || lag.Partitions[0] != want[0] {
		t.Errorf("/api/consumers/c/topics/orders %+v, want lag 6, %+v", lag, want)
	}
	// The dashboard's snapshot counts the same: lag 6 up to the LSO, which
	// it carries beside the head.
	var snap update
	if err := json.Unmarshal([]byte(e.openSSE("/api/events", nil).next(t, 5*time.Second).data), &snap); err != nil {
		t.Fatal(err)
	}
	var groups []string
	for _, g := range snap.Groups {
		groups = append(groups, fmt.Sprintf("%s/%s lag %v", g.Consumer, g.Topic, g.Lag))
		if g.Consumer == "c" && g.Topic == "orders" && (len(g.Lag) != 1 || g.Lag[0] != 6) {
			t.Errorf("the dashboard's lag of c on orders: %v, want [6] (up to the LSO)", g.Lag)
		}
	}
	if len(snap.Topics) != 1 || snap.Topics[0].Partitions[0].Stable != 10 || snap.Topics[0].Partitions[0].Head != 15 {
		t.Errorf("the dashboard's partition: %+v, want stable 10, head 15", snap.Topics[0].Partitions)
	}
	if len(groups) == 0 {
		t.Errorf("the dashboard's snapshot has no groups")
	}
}
