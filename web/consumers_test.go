package web

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/passbook-log/passbook/consumer"
	"github.com/passbook-log/passbook/offsets"
)

func TestConsumers_CommitListLag(t *testing.T) {
	e := newEnv(t, nil)
	topic := e.createTopic("orders", 2)
	fill(t, topic, 0, 100)
	fill(t, topic, 1, 50)
	e.createTopic("clicks", 1)

	var list struct{ Consumers []consumerInfo }
	r := e.get("/api/consumers")
	e.want(r, http.StatusOK, "")
	r.decode(t, &list)
	if list.Consumers == nil || len(list.Consumers) != 0 {
		t.Fatalf("consumers before any commit: %s", r.body)
	}

	r = e.postJSON("/api/consumers/analytics-v2/topics/orders/commit", `{"offsets": [{"partition": 0, "offset": 40}]}`)
	e.want(r, http.StatusOK, "")
	e.want(e.postJSON("/api/consumers/orders-writer/topics/orders/commit",
		`{"offsets": [{"partition": 0, "offset": 100}, {"partition": 1, "offset": 50}]}`), http.StatusOK, "")
	if got, _ := e.db.Offsets().Committed(context.Background(), offsets.Key{Consumer: "analytics-v2", Topic: "orders"}); got != 40 {
		t.Errorf("committed %d, want 40", got)
	}

	r = e.get("/api/consumers")
	e.want(r, http.StatusOK, "")
	r.decode(t, &list)
	if len(list.Consumers) != 2 {
		t.Fatalf("list %s", r.body)
	}
	// Partition 1 has nothing committed: everything kept counts as lag.
	if c := list.Consumers[0]; c.Name != "analytics-v2" || c.Lag != 60+50 || len(c.Topics) != 1 || c.Topics[0].Topic != "orders" || c.Topics[0].Updated == nil {
		t.Errorf("analytics-v2: %+v", c)
	}
	if c := list.Consumers[1]; c.Name != "orders-writer" || c.Lag != 0 {
		t.Errorf("orders-writer: %+v", c)
	}

	var info consumerInfo
	r = e.get("/api/consumers/analytics-v2")
	e.want(r, http.StatusOK, "")
	r.decode(t, &info)
	if ps := info.Topics[0].Partitions; len(ps) != 2 || ps[0].Committed != 40 || ps[0].Lag != 60 || ps[0].Head != 100 || ps[1].Committed != -1 || ps[1].Lag != 50 {
		t.Errorf("partitions %+v", ps)
	}

	var lag consumerLagResponse
	r = e.get("/api/consumers/analytics-v2/topics/orders")
	e.want(r, http.StatusOK, "")
	r.decode(t, &lag)
	want, _ := consumer.Lag(context.Background(), e.db.Offsets(), topic, "analytics-v2")
	if lag.Lag != 110 || len(lag.Partitions) != 2 || lag.Partitions[0] != want[0] || lag.Partitions[1] != want[1] {
		t.Errorf("lag %+v, want %+v", lag, want)
	}

	e.want(e.get("/api/consumers/nobody"), http.StatusNotFound, CodeUnknownConsumer)
	e.want(e.get("/api/consumers/analytics-v2/topics/clicks"), http.StatusNotFound, CodeUnknownConsumer)
	e.want(e.get("/api/consumers/analytics-v2/topics/nope"), http.StatusNotFound, CodeUnknownTopic)
	e.want(e.get("/api/consumers/analytics-v2/topics/..%2Fx"), http.StatusBadRequest, CodeInvalidName)
	e.want(e.get("/api/consumers/bad%00name"), http.StatusBadRequest, CodeInvalidName)
}

func TestConsumers_Commit_BadInput(t *testing.T) {
	e := newEnv(t, &Options{MaxBodyBytes: 256})
	topic := e.createTopic("orders", 1)
	fill(t, topic, 0, 10)
	const path = "/api/consumers/c/topics/orders/commit"
	for _, tc := range []struct {
		name, path, ct, body string
		status               int
		code                 string
	}{
		{"malformed JSON", path, "application/json", `{"offsets": [`, 400, CodeMalformedJSON},
		{"offset not a number", path, "application/json", `{"offsets": [{"partition": 0, "offset": "5"}]}`, 400, CodeMalformedJSON},
		{"no offsets", path, "application/json", `{"offsets": []}`, 400, CodeBadRequest},
		{"past the head", path, "application/json", `{"offsets": [{"partition": 0, "offset": 11}]}`, 416, CodeOutOfRange},
		{"negative", path, "application/json", `{"offsets": [{"partition": 0, "offset": -1}]}`, 416, CodeOutOfRange},
		{"unknown partition", path, "application/json", `{"offsets": [{"partition": 3, "offset": 1}]}`, 404, CodeUnknownPartition},
		{"unknown topic", "/api/consumers/c/topics/nope/commit", "application/json", `{"offsets": [{"partition": 0, "offset": 1}]}`, 404, CodeUnknownTopic},
		{"wrong content type", path, "text/plain", `{"offsets": [{"partition": 0, "offset": 1}]}`, 415, CodeUnsupportedMedia},
		{"oversized body", path, "application/json", `{"offsets": [` + strings.Repeat(`{"partition": 0, "offset": 1},`, 20) + `{"partition": 0, "offset": 1}]}`, 413, CodeBodyTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := e.with(t)
			e.want(e.do("POST", tc.path, tc.ct, tc.body), tc.status, tc.code)
		})
	}
	if es, _ := e.db.Offsets().List(context.Background(), offsets.Filter{}); len(es) != 0 {
		t.Errorf("bad commits stored %+v", es)
	}
}

func TestConsumers_Reset(t *testing.T) {
	e := newEnv(t, nil)
	topic := e.createTopic("orders", 2)
	fill(t, topic, 0, 100)
	fill(t, topic, 1, 30)
	const path = "/api/consumers/analytics-v2/topics/orders/reset"
	type resetResult struct {
		Offsets []position `json:"offsets"`
	}
	for _, tc := range []struct {
		body string
		want []position
	}{
		{`{"to": "earliest"}`, []position{{0, 0}, {1, 0}}},
		{`{"to": "latest"}`, []position{{0, 100}, {1, 30}}},
		{`{"to": 25, "partitions": [0]}`, []position{{0, 25}}},
		{`{"to": "12", "partitions": [1]}`, []position{{1, 12}}},
		{`{"to": "2000-01-01T00:00:00Z", "partitions": [1]}`, []position{{1, 0}}},
	} {
		r := e.postJSON(path, tc.body)
		e.want(r, http.StatusOK, "")
		var got resetResult
		r.decode(t, &got)
		if len(got.Offsets) != len(tc.want) {
			t.Fatalf("%s: moved %+v, want %+v", tc.body, got.Offsets, tc.want)
		}
		for i := range tc.want {
			if got.Offsets[i] != tc.want[i] {
				t.Errorf("%s: moved %+v, want %+v", tc.body, got.Offsets, tc.want)
			}
		}
	}
	ctx := context.Background()
	if c, _ := e.db.Offsets().Committed(ctx, offsets.Key{Consumer: "analytics-v2", Topic: "orders", Partition: 0}); c != 25 {
		t.Errorf("partition 0 committed %d, want 25", c)
	}

	for _, tc := range []struct {
		name, body string
		status     int
		code       string
	}{
		{"past the head", `{"to": 101}`, 416, CodeOutOfRange},
		{"no to", `{}`, 400, CodeBadRequest},
		{"bad to", `{"to": "yesterday"}`, 400, CodeBadRequest},
		{"to an object", `{"to": {}}`, 400, CodeBadRequest},
		{"unknown partition", `{"to": "earliest", "partitions": [5]}`, 404, CodeUnknownPartition},
		{"malformed JSON", `{"to": `, 400, CodeMalformedJSON},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := e.with(t)
			e.want(e.postJSON(path, tc.body), tc.status, tc.code)
		})
	}
}

func TestConsumers_LeaseHeld(t *testing.T) {
	e := newEnv(t, nil)
	topic := e.createTopic("orders", 1)
	fill(t, topic, 0, 10)
	ctx := context.Background()
	c, err := consumer.New(ctx, topic, e.db.Offsets(), consumer.Options{Name: "orders-writer", Holder: "worker-1", LeaseTTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	r := e.postJSON("/api/consumers/orders-writer/topics/orders/reset", `{"to": "earliest"}`)
	e.want(r, http.StatusConflict, CodeLeaseHeld)
	e.want(e.postJSON("/api/consumers/orders-writer/topics/orders/commit", `{"offsets": [{"partition": 0, "offset": 3}]}`), http.StatusConflict, CodeLeaseHeld)
	c.Close()
	e.want(e.postJSON("/api/consumers/orders-writer/topics/orders/commit", `{"offsets": [{"partition": 0, "offset": 3}]}`), http.StatusOK, "")
	// The HTTP commit released the lease: the consumer can start again.
	c, err = consumer.New(ctx, topic, e.db.Offsets(), consumer.Options{Name: "orders-writer", Holder: "worker-1"})
	if err != nil {
		t.Fatalf("consumer after an HTTP commit: %v", err)
	}
	defer c.Close()
	if got := c.Positions()[0]; got != 3 {
		t.Errorf("consumer resumes at %d, want the committed 3", got)
	}
}
