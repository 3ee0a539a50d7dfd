package web

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/storage"
)

func (e *env) read(path string) readResponse {
	e.t.Helper()
	r := e.get(path)
	e.want(r, http.StatusOK, "")
	var rr readResponse
	r.decode(e.t, &rr)
	return rr
}

func TestAppend_JSON(t *testing.T) {
	e := newEnv(t, nil)
	topic := e.createTopic("orders", 3)
	body := `{"records": [
		{"key": "alice", "value": "order 1", "headers": {"trace": "t1", "source": "web"}},
		{"key": "bob", "value": "order 2"},
		{"key": "alice", "value": "order 3", "timestamp": "2026-11-28T10:00:00Z"},
		{"value": "to p2", "partition": 2},
		{"key": "alice", "value": null}
	]}`
	r := e.postJSON("/api/topics/orders/records?durability=fsync", body)
	e.want(r, http.StatusOK, "")
	var got struct{ Offsets []position }
	r.decode(t, &got)
	if len(got.Offsets) != 5 {
		t.Fatalf("offsets %+v", got.Offsets)
	}
	// Keyed records go by key, the others where they ask; in each
	// partition the offsets follow the request's order, densely.
	pa := topic.PartitionFor([]byte("alice"))
	wantParts := []int32{pa, topic.PartitionFor([]byte("bob")), pa, 2, pa}
	next := map[int32]int64{}
	for i, pos := range got.Offsets {
		if pos.Partition != wantParts[i] || pos.Offset != next[pos.Partition] {
			t.Errorf("record %d at %+v, want partition %d offset %d", i, pos, wantParts[i], next[pos.Partition])
		}
		next[pos.Partition] = pos.Offset + 1
	}

	rr := e.read(fmt.Sprintf("/api/topics/orders/partitions/%d/records?offset=%d", pa, got.Offsets[0].Offset))
	if len(rr.Records) < 3 {
		t.Fatalf("read %+v", rr)
	}
	first := rr.Records[0]
	if *first.Key != "alice" || *first.Value != "order 1" || first.Headers["trace"] != "t1" || first.Headers["source"] != "web" || first.Encoding != "text" {
		t.Errorf("first record %+v", first)
	}
	var third, tomb recordOut
	for _, rec := range rr.Records {
		switch rec.Offset {
		case got.Offsets[2].Offset:
			third = rec
		case got.Offsets[4].Offset:
			tomb = rec
		}
	}
	if !third.Timestamp.Equal(time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)) {
		t.Errorf("timestamp %v", third.Timestamp)
	}
	if tomb.Value != nil || *tomb.Key != "alice" {
		t.Errorf("tombstone %+v", tomb)
	}

	// The partition endpoint appends all to it, in one batch.
	r = e.postJSON("/api/topics/orders/partitions/1/records", `{"records": [{"value": "a"}, {"value": "b"}]}`)
	e.want(r, http.StatusOK, "")
	r.decode(t, &got)
	if head := mustLog(t, topic, 1).Head(); got.Offsets[1] != (position{1, head - 1}) || got.Offsets[0] != (position{1, head - 2}) {
		t.Errorf("partition append %+v, head %d", got.Offsets, head)
	}

	// base64 both ways, for bytes that are not text.
	raw := []byte{0xff, 0x00, 0xfe}
	b64 := base64.StdEncoding.EncodeToString(raw)
	r = e.postJSON("/api/topics/orders/partitions/0/records", fmt.Sprintf(`{"encoding": "base64", "records": [{"key": %q, "value": %q}]}`, b64, b64))
	e.want(r, http.StatusOK, "")
	r.decode(t, &got)
	rr = e.read(fmt.Sprintf("/api/topics/orders/partitions/0/records?offset=%d", got.Offsets[0].Offset))
	if rec := rr.Records[0]; rec.Encoding != "base64" || *rec.Value != b64 || *rec.Key != b64 {
		t.Errorf("binary record read as %+v, want base64 %s", rec, b64)
	}
	l := mustLog(t, topic, 0)
	for rec, err := range l.Records(got.Offsets[0].Offset) {
		if err != nil || string(rec.Value) != string(raw) {
			t.Errorf("stored %x, %v; want %x", rec.Value, err, raw)
		}
	}
	rr = e.read("/api/topics/orders/partitions/1/records?encoding=base64&limit=1")
	if rec := rr.Records[0]; rec.Encoding != "base64" {
		t.Errorf("encoding=base64 gave %+v", rec)
	}
}

func mustLog(t *testing.T, topic *passbook.Topic, p int32) *storage.Log {
	t.Helper()
	l, err := topic.Partition(p)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestAppend_Raw(t *testing.T) {
	e := newEnv(t, nil)
	topic := e.createTopic("orders", 2)
	r := e.do("POST", "/api/topics/orders/records?key=alice&header=trace:t-1&header=Source:cli&timestamp=2026-11-28T10:00:00Z",
		"application/octet-stream", "\x00\x01binary")
	e.want(r, http.StatusOK, "")
	var got struct{ Offsets []position }
	r.decode(t, &got)
	if want := (position{topic.PartitionFor([]byte("alice")), 0}); len(got.Offsets) != 1 || got.Offsets[0] != want {
		t.Fatalf("raw append at %+v, want %+v", got.Offsets, want)
	}
	l, _ := topic.Partition(got.Offsets[0].Partition)
	for rec, err := range l.Records(0) {
		if err != nil {
			t.Fatal(err)
		}
		if string(rec.Key) != "alice" || string(rec.Value) != "\x00\x01binary" || len(rec.Headers) != 2 ||
			rec.Headers[0].Key != "trace" || string(rec.Headers[0].Value) != "t-1" || rec.Headers[1].Key != "Source" ||
			rec.Timestamp.UTC() != time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC) {
			t.Errorf("stored %+v", rec)
		}
	}
	// text/plain only from the dashboard's own page (guard.go).
	r = e.send(request{method: "POST", path: "/api/topics/orders/records?partition=1", ctype: "text/plain; charset=utf-8", body: "hello",
		header: map[string]string{"Origin": e.url, "Sec-Fetch-Site": "same-origin"}})
	e.want(r, http.StatusOK, "")
	r.decode(t, &got)
	if got.Offsets[0].Partition != 1 {
		t.Errorf("partition=1 appended to %+v", got.Offsets)
	}
	r = e.do("POST", "/api/topics/orders/partitions/0/records", "application/octet-stream", "")
	e.want(r, http.StatusOK, "")
	rr := e.read("/api/topics/orders/partitions/0/records?offset=latest")
	if rr.Head != rr.NextOffset || len(rr.Records) != 0 {
		t.Errorf("offset=latest read %+v", rr)
	}
	rr = e.read(fmt.Sprintf("/api/topics/orders/partitions/0/records?offset=%d", rr.Head-1))
	if v := rr.Records[0].Value; v == nil || *v != "" || rr.Records[0].Key != nil {
		t.Errorf("an empty body is an empty value, not a tombstone: %+v", rr.Records[0])
	}
}

func TestAppend_BadInput(t *testing.T) {
	e := newEnv(t, &Options{MaxBodyBytes: 4096, MaxAppendRecords: 10})
	if _, err := e.db.CreateTopic("small", passbook.TopicConfig{Partitions: 2, MaxRecordBytes: 100}); err != nil {
		t.Fatal(err)
	}
	many := `{"records": [` + strings.Repeat(`{"value": "x"},`, 10) + `{"value": "x"}]}`
	for _, tc := range []struct {
		name, path, ct, body string
		status               int
		code                 string
	}{
		{"malformed JSON", "/api/topics/small/records", "application/json", `{"records": [{"value": "x"}`, 400, CodeMalformedJSON},
		{"value not a string", "/api/topics/small/records", "application/json", `{"records": [{"value": 42}]}`, 400, CodeMalformedJSON},
		{"headers not strings", "/api/topics/small/records", "application/json", `{"records": [{"value": "x", "headers": {"a": 1}}]}`, 400, CodeMalformedJSON},
		{"unknown field", "/api/topics/small/records", "application/json", `{"records": [{"val": "x"}]}`, 400, CodeMalformedJSON},
		{"no records", "/api/topics/small/records", "application/json", `{"records": []}`, 400, CodeBadRequest},
		{"bad encoding", "/api/topics/small/records", "application/json", `{"encoding": "hex", "records": [{"value": "x"}]}`, 400, CodeBadRequest},
		{"bad base64", "/api/topics/small/records", "application/json", `{"encoding": "base64", "records": [{"value": "!!"}]}`, 400, CodeBadRequest},
		{"query key on JSON", "/api/topics/small/records?key=a", "application/json", `{"records": [{"value": "x"}]}`, 400, CodeBadRequest},
		{"bad durability", "/api/topics/small/records?durability=paper", "application/json", `{"records": [{"value": "x"}]}`, 400, CodeBadRequest},
		{"bad raw header", "/api/topics/small/records?header=nocolon", "application/octet-stream", `x`, 400, CodeBadRequest},
		{"bad raw timestamp", "/api/topics/small/records?timestamp=yesterday", "application/octet-stream", `x`, 400, CodeBadRequest},
		{"partition mismatch", "/api/topics/small/partitions/0/records", "application/json", `{"records": [{"value": "x", "partition": 1}]}`, 400, CodeBadRequest},
		{"unknown record partition", "/api/topics/small/records", "application/json", `{"records": [{"value": "x", "partition": 9}]}`, 404, CodeUnknownPartition},
		{"unknown raw partition", "/api/topics/small/records?partition=9", "application/octet-stream", `x`, 404, CodeUnknownPartition},
		{"unknown partition", "/api/topics/small/partitions/9/records", "application/json", `{"records": [{"value": "x"}]}`, 404, CodeUnknownPartition},
		{"unknown topic", "/api/topics/nope/records", "application/json", `{"records": [{"value": "x"}]}`, 404, CodeUnknownTopic},
		{"path-like topic", "/api/topics/..%2Fsmall/records", "application/json", `{"records": [{"value": "x"}]}`, 400, CodeInvalidName},
		{"too many records", "/api/topics/small/records", "application/json", many, 413, CodeBodyTooLarge},
		{"oversized JSON body", "/api/topics/small/records", "application/json", `{"records": [{"value": "` + strings.Repeat("x", 5000) + `"}]}`, 413, CodeBodyTooLarge},
		{"oversized raw body", "/api/topics/small/records", "application/octet-stream", strings.Repeat("x", 5000), 413, CodeBodyTooLarge},
		{"record too large", "/api/topics/small/partitions/0/records", "application/json", `{"records": [{"value": "` + strings.Repeat("x", 200) + `"}]}`, 413, CodeRecordTooLarge},
		{"timestamp past message.timestamp.after.max.ms", "/api/topics/small/partitions/0/records", "application/json", `{"records": [{"value": "x", "timestamp": "3000-01-01T00:00:00Z"}]}`, 400, CodeInvalidTimestamp},
		{"raw timestamp past message.timestamp.after.max.ms", "/api/topics/small/records?timestamp=3000-01-01T00:00:00Z", "application/octet-stream", `x`, 400, CodeInvalidTimestamp},
		{"wrong content type", "/api/topics/small/records", "application/xml", `<records/>`, 415, CodeUnsupportedMedia},
		{"form content type", "/api/topics/small/records", "application/x-www-form-urlencoded", `value=x`, 415, CodeUnsupportedMedia},
		{"no content type", "/api/topics/small/records", "", `{"records": [{"value": "x"}]}`, 415, CodeUnsupportedMedia},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := e.with(t)
			e.want(e.do("POST", tc.path, tc.ct, tc.body), tc.status, tc.code)
		})
	}
	for _, p := range e.db.Topics()[0].Describe().Partitions {
		if p.Head != 0 {
			t.Errorf("partition %d has %d records after bad appends, want none", p.Partition, p.Head)
		}
	}
}

func TestRead_Range(t *testing.T) {
	e := newEnv(t, &Options{MaxReadRecords: 50})
	topic := e.createTopic("orders", 1)
	fill(t, topic, 0, 120)
	rr := e.read("/api/topics/orders/partitions/0/records?offset=10&limit=5")
	if len(rr.Records) != 5 || rr.Records[0].Offset != 10 || *rr.Records[4].Value != "v14" || rr.NextOffset != 15 || rr.Head != 120 {
		t.Fatalf("read %+v", rr)
	}
	rr = e.read("/api/topics/orders/partitions/0/records")
	if len(rr.Records) != 50 || rr.Records[0].Offset != 0 || rr.NextOffset != 50 {
		t.Errorf("default read: %d records from %d, next %d; want 50 (the cap) from 0", len(rr.Records), rr.Records[0].Offset, rr.NextOffset)
	}
	rr = e.read("/api/topics/orders/partitions/0/records?offset=118&limit=50")
	if len(rr.Records) != 2 || rr.NextOffset != 120 {
		t.Errorf("read at the end: %+v", rr)
	}
	rr = e.read("/api/topics/orders/partitions/0/records?offset=120")
	if len(rr.Records) != 0 || rr.NextOffset != 120 {
		t.Errorf("read at the head: %+v", rr)
	}

	r := e.get("/api/topics/orders/partitions/0/records?offset=121")
	e.want(r, http.StatusRequestedRangeNotSatisfiable, CodeOutOfRange)
	details := r.json(t)["error"].(map[string]any)["details"].(map[string]any)
	if details["head"] != 120.0 || details["start_offset"] != 0.0 || details["offset"] != 121.0 {
		t.Errorf("details %v", details)
	}
	for _, q := range []string{"offset=-1", "offset=x", "limit=0", "limit=x", "wait=forever", "wait=-1s", "encoding=hex"} {
		e.want(e.get("/api/topics/orders/partitions/0/records?"+q), http.StatusBadRequest, CodeBadRequest)
	}
	e.want(e.get("/api/topics/nope/partitions/0/records"), http.StatusNotFound, CodeUnknownTopic)
	e.want(e.get("/api/topics/orders/partitions/1/records"), http.StatusNotFound, CodeUnknownPartition)
}

func TestRead_BelowLogStart(t *testing.T) {
	e := newEnv(t, nil)
	topic, err := e.db.CreateTopic("orders", passbook.TopicConfig{SegmentBytes: 1024, RetentionBytes: 2048})
	if err != nil {
		t.Fatal(err)
	}
	fill(t, topic, 0, 2000)
	l, _ := topic.Partition(0)
	if _, err := l.Retain(); err != nil {
		t.Fatal(err)
	}
	start := l.StartOffset()
	if start == 0 {
		t.Fatal("retention deleted nothing")
	}
	r := e.get("/api/topics/orders/partitions/0/records?offset=0")
	e.want(r, http.StatusRequestedRangeNotSatisfiable, CodeOutOfRange)
	if msg := r.json(t)["error"].(map[string]any)["message"].(string); !strings.Contains(msg, "deleted by retention") {
		t.Errorf("message %q does not say retention deleted them", msg)
	}
	rr := e.read("/api/topics/orders/partitions/0/records?limit=1")
	if rr.StartOffset != start || rr.Records[0].Offset != start {
		t.Errorf("earliest read %+v, want from %d", rr, start)
	}
}

func TestRead_MaxReadBytes(t *testing.T) {
	e := newEnv(t, &Options{MaxReadBytes: 10})
	topic := e.createTopic("orders", 1)
	topic.AppendTo(0, []passbook.Record{{Value: []byte(strings.Repeat("x", 50))}, {Value: []byte("y")}}, 0)
	rr := e.read("/api/topics/orders/partitions/0/records?limit=10")
	if len(rr.Records) != 1 || rr.NextOffset != 1 {
		t.Errorf("got %d records, next %d; want the one big record alone", len(rr.Records), rr.NextOffset)
	}
}

func TestRead_LongPoll(t *testing.T) {
	e := newEnv(t, nil)
	topic := e.createTopic("orders", 1)
	fill(t, topic, 0, 3)

	// Records already there: no waiting.
	began := time.Now()
	rr := e.read("/api/topics/orders/partitions/0/records?offset=1&wait=5s")
	if len(rr.Records) != 2 || time.Since(began) > time.Second {
		t.Errorf("read %d records in %v", len(rr.Records), time.Since(began))
	}

	// At the head: the poll returns as soon as a record arrives.
	go func() {
		time.Sleep(200 * time.Millisecond)
		topic.AppendTo(0, []passbook.Record{{Value: []byte("late")}}, 0)
	}()
	began = time.Now()
	rr = e.read("/api/topics/orders/partitions/0/records?offset=3&wait=10s")
	took := time.Since(began)
	if len(rr.Records) != 1 || *rr.Records[0].Value != "late" || took < 150*time.Millisecond || took > 5*time.Second {
		t.Errorf("long poll: %+v after %v", rr.Records, took)
	}

	// Nothing comes: it returns empty after the wait.
	began = time.Now()
	rr = e.read("/api/topics/orders/partitions/0/records?offset=latest&wait=300ms")
	if took := time.Since(began); len(rr.Records) != 0 || took < 250*time.Millisecond || took > 5*time.Second {
		t.Errorf("empty long poll: %d records after %v", len(rr.Records), took)
	}

	// Close cuts a long poll short.
	go func() {
		time.Sleep(200 * time.Millisecond)
		e.s.Close()
	}()
	began = time.Now()
	rr = e.read("/api/topics/orders/partitions/0/records?offset=latest&wait=30s")
	if took := time.Since(began); took > 5*time.Second {
		t.Errorf("Close left a long poll waiting %v", took)
	}
}
