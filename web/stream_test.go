package web

import (
	"encoding/json"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/passbook-log/passbook"
)

func recordEvent(t *testing.T, ev event) recordOut {
	t.Helper()
	if ev.name != "record" {
		t.Fatalf("event %q, want record: %s", ev.name, ev.data)
	}
	var rec recordOut
	if err := json.Unmarshal([]byte(ev.data), &rec); err != nil {
		t.Fatal(err)
	}
	if ev.id != strconv.FormatInt(rec.Offset, 10) {
		t.Fatalf("event id %q for offset %d", ev.id, rec.Offset)
	}
	return rec
}

func TestStream_FollowsTheTail(t *testing.T) {
	e := newEnv(t, nil)
	topic := e.createTopic("orders", 1)
	fill(t, topic, 0, 5)

	c := e.openSSE("/api/topics/orders/partitions/0/stream?from=2", nil)
	for want := int64(2); want < 5; want++ {
		if rec := recordEvent(t, c.next(t, 2*time.Second)); rec.Offset != want || *rec.Value != "v"+strconv.FormatInt(want, 10) {
			t.Fatalf("got %+v, want offset %d", rec, want)
		}
	}
	// At the head it waits, and a new record arrives at once.
	began := time.Now()
	topic.AppendTo(0, []passbook.Record{{Key: []byte("k"), Value: []byte("new")}}, 0)
	rec := recordEvent(t, c.next(t, 2*time.Second))
	if rec.Offset != 5 || *rec.Value != "new" || *rec.Key != "k" {
		t.Fatalf("got %+v", rec)
	}
	t.Logf("a record appended reached the stream in %v", time.Since(began))

	// Default: from latest, only new records.
	c2 := e.openSSE("/api/topics/orders/partitions/0/stream", nil)
	topic.AppendTo(0, []passbook.Record{{Value: []byte("newer")}}, 0)
	if rec := recordEvent(t, c2.next(t, 2*time.Second)); rec.Offset != 6 {
		t.Fatalf("from latest got %+v", rec)
	}
}

func TestStream_ResumesAfterLastEventID(t *testing.T) {
	e := newEnv(t, nil)
	topic := e.createTopic("orders", 1)
	fill(t, topic, 0, 10)
	// Last-Event-ID wins over ?from=: a reconnecting EventSource keeps
	// its original URL.
	c := e.openSSE("/api/topics/orders/partitions/0/stream?from=0", map[string]string{"Last-Event-ID": "6"})
	for want := int64(7); want < 10; want++ {
		if rec := recordEvent(t, c.next(t, 2*time.Second)); rec.Offset != want {
			t.Fatalf("resumed at %d, want %d", rec.Offset, want)
		}
	}
}

func TestStream_BadInput(t *testing.T) {
	e := newEnv(t, nil)
	topic := e.createTopic("orders", 1)
	fill(t, topic, 0, 10)
	e.want(e.get("/api/topics/orders/partitions/0/stream?from=11"), http.StatusRequestedRangeNotSatisfiable, CodeOutOfRange)
	e.want(e.get("/api/topics/orders/partitions/0/stream?from=x"), http.StatusBadRequest, CodeBadRequest)
	e.want(e.get("/api/topics/orders/partitions/0/stream?encoding=hex"), http.StatusBadRequest, CodeBadRequest)
	e.want(e.get("/api/topics/orders/partitions/3/stream"), http.StatusNotFound, CodeUnknownPartition)
	e.want(e.get("/api/topics/nope/partitions/0/stream"), http.StatusNotFound, CodeUnknownTopic)
	req, _ := http.NewRequest("GET", e.url+"/api/topics/orders/partitions/0/stream", nil)
	req.Header.Set("Last-Event-ID", "ten")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusBadRequest {
		t.Errorf("Last-Event-ID ten: %d", res.StatusCode)
	}
	req.Header.Set("Last-Event-ID", "10") // resume at 11: past the head
	res, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusRequestedRangeNotSatisfiable {
		t.Errorf("Last-Event-ID past the head: %d", res.StatusCode)
	}
}

func TestStream_HeartbeatAndClose(t *testing.T) {
	e := newEnv(t, &Options{Heartbeat: 50 * time.Millisecond})
	e.createTopic("orders", 1)
	c := e.openSSE("/api/topics/orders/partitions/0/stream", nil)
	time.Sleep(200 * time.Millisecond) // heartbeats keep it open, no events
	select {
	case ev := <-c.events:
		t.Fatalf("unexpected event %+v", ev)
	default:
	}
	e.s.Close()
	select {
	case _, ok := <-c.events:
		if ok {
			t.Fatal("an event after Close")
		}
	case <-time.After(3 * time.Second):
		t.Fatal("Close did not end the stream")
	}
}

// TestEvents_SnapshotThenUpdates checks the dashboard's stream: a snapshot
// of every partition and consumer, then what changed.
func TestEvents_SnapshotThenUpdates(t *testing.T) {
	e := newEnv(t, &Options{EventInterval: 100 * time.Millisecond})
	topic := e.createTopic("orders", 2)
	fill(t, topic, 0, 100)
	e.want(e.postJSON("/api/consumers/analytics-v2/topics/orders/commit", `{"offsets": [{"partition": 0, "offset": 40}]}`), http.StatusOK, "")

	c := e.openSSE("/api/events", nil)
	ev := c.next(t, 2*time.Second)
	if ev.name != "snapshot" {
		t.Fatalf("first event %q", ev.name)
	}
	var snap update
	json.Unmarshal([]byte(ev.data), &snap)
	if len(snap.Topics) != 1 || snap.Topics[0].Name != "orders" || len(snap.Topics[0].Partitions) != 2 ||
		snap.Topics[0].Partitions[0].Head != 100 || snap.Topics[0].Config.Partitions != 2 {
		t.Fatalf("snapshot topics %s", ev.data)
	}
	if len(snap.Groups) != 1 || snap.Groups[0].Consumer != "analytics-v2" || snap.Groups[0].Committed[0] != 40 || snap.Groups[0].Committed[1] != -1 {
		t.Fatalf("snapshot groups %s", ev.data)
	}

	began := time.Now()
	fill(t, topic, 1, 7)
	e.want(e.postJSON("/api/topics", `{"name": "clicks"}`), http.StatusCreated, "")
	e.want(e.postJSON("/api/consumers/analytics-v2/topics/orders/commit", `{"offsets": [{"partition": 0, "offset": 90}]}`), http.StatusOK, "")
	var sawHead, sawCommit bool
	for !sawHead || !sawCommit {
		ev := c.next(t, 2*time.Second)
		var u update
		json.Unmarshal([]byte(ev.data), &u)
		for _, ts := range u.Topics {
			// A new topic comes whole, with its config; a changed one
			// with only its changed partitions.
			if (ts.Config != nil) != (ts.Name == "clicks") {
				t.Errorf("topic %s in an update with config %v", ts.Name, ts.Config)
			}
			for _, p := range ts.Partitions {
				if ts.Name == "orders" && p.P == 1 && p.Head == 7 {
					sawHead = true
				}
				if ts.Name == "orders" && p.P == 0 {
					t.Errorf("orders/0 did not change but is in %s", ev.data)
				}
			}
		}
		for _, g := range u.Groups {
			if g.Committed[0] == 90 {
				sawCommit = true
			}
		}
	}
	t.Logf("the dashboard stream had the append and the commit after %v", time.Since(began))

	// A deleted topic is removed, with its consumers.
	e.want(e.do("DELETE", "/api/topics/orders", "", nil), http.StatusNoContent, "")
	for {
		var u update
		json.Unmarshal([]byte(c.next(t, 2*time.Second).data), &u)
		if len(u.RemovedTopics) == 1 && u.RemovedTopics[0] == "orders" {
			if len(u.RemovedGroups) != 1 || u.RemovedGroups[0].Consumer != "analytics-v2" {
				t.Errorf("removed groups %+v", u.RemovedGroups)
			}
			break
		}
	}
}

// TestHub_DropsSlowSubscriber checks that a subscriber that does not take
// its updates is dropped (its channel closed) rather than holding the hub.
func TestHub_DropsSlowSubscriber(t *testing.T) {
	e := newEnv(t, &Options{EventInterval: 10 * time.Millisecond})
	topic := e.createTopic("orders", 1)
	sub, _, err := e.s.hub.subscribe()
	if err != nil {
		t.Fatal(err)
	}
	fast := e.openSSE("/api/events", nil)
	fast.next(t, time.Second) // the snapshot
	deadline := time.Now().Add(10 * time.Second)
	for dropped := false; !dropped; {
		if time.Now().After(deadline) {
			t.Fatal("a subscriber that never reads was not dropped")
		}
		fill(t, topic, 0, 1)
		time.Sleep(15 * time.Millisecond)
		e.s.hub.mu.Lock()
		_, still := e.s.hub.mu.subs[sub]
		e.s.hub.mu.Unlock()
		dropped = !still
	}
	for range sub.ch { // buffered updates, then closed
	}
	// The others go on.
	fill(t, topic, 0, 1)
	want := topic.Describe().Partitions[0].Head
	for {
		var u update
		json.Unmarshal([]byte(fast.next(t, 2*time.Second).data), &u)
		if len(u.Topics) > 0 && u.Topics[0].Partitions[0].Head == want {
			break
		}
	}
}

func TestEvents_Samples(t *testing.T) {
	e := newEnv(t, &Options{EventInterval: 100 * time.Millisecond})
	topic := e.createTopic("orders", 1)
	fill(t, topic, 0, 10)
	e.want(e.postJSON("/api/consumers/c/topics/orders/commit", `{"offsets": [{"partition": 0, "offset": 4}]}`), http.StatusOK, "")
	c := e.openSSE("/api/events", nil)
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		var u update
		json.Unmarshal([]byte(c.next(t, 3*time.Second).data), &u)
		if u.Sample != nil && u.Sample.Heads["orders"] == 10 && len(u.Sample.Lags) == 1 && u.Sample.Lags[0].Lag == 6 {
			break
		}
	}
	if time.Now().After(deadline) {
		t.Fatal("no sample with the head and the lag")
	}

	var h struct {
		Topic   string
		Records series
	}
	r := e.get("/api/history?topic=orders")
	e.want(r, http.StatusOK, "")
	r.decode(t, &h)
	if n := len(h.Records.T); n == 0 || h.Records.V[n-1] != 10 || len(h.Records.V) != n {
		t.Errorf("topic history %+v", h)
	}
	var ch struct {
		Consumer string
		Lag      map[string]series
	}
	r = e.get("/api/history?consumer=c&since=1m")
	e.want(r, http.StatusOK, "")
	r.decode(t, &ch)
	if s := ch.Lag["orders"]; len(s.V) == 0 || s.V[len(s.V)-1] != 6 {
		t.Errorf("consumer history %+v", ch)
	}
	e.want(e.get("/api/history"), http.StatusBadRequest, CodeBadRequest)
	e.want(e.get("/api/history?topic=orders&consumer=c"), http.StatusBadRequest, CodeBadRequest)
	e.want(e.get("/api/history?topic=nope"), http.StatusNotFound, CodeUnknownTopic)
	e.want(e.get("/api/history?topic=orders&since=x"), http.StatusBadRequest, CodeBadRequest)
}

func TestSeries_TrimsToWindow(t *testing.T) {
	var s series
	for i := range int64(1000) {
		s.add(i*1000, i, 100*time.Second)
	}
	if len(s.T) > 140 || s.T[0] < 999_000-100_000-40_000 || s.V[len(s.V)-1] != 999 {
		t.Errorf("%d points from %d: the window is not kept", len(s.T), s.T[0])
	}
	got := s.since(990_000)
	if len(got.T) != 10 || got.V[0] != 990 {
		t.Errorf("since: %+v", got)
	}
}
