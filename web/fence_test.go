package web

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/storage"
)

// TestServer_FencedPartition: on a data directory where one partition
// lost a segment file, the API serves the rest; the damaged partition
// answers 503 partition_fenced, /api/topics/{topic} and the dashboard's
// events say it is fenced and why, and /readyz lists it.
func TestServer_FencedPartition(t *testing.T) {
	e := fencedEnv(t, nil)

	e.want(e.postJSON("/api/topics/orders/partitions/0/records", `{"records": [{"value": "v"}]}`), http.StatusOK, "")
	e.want(e.postJSON("/api/topics/orders/partitions/1/records", `{"records": [{"value": "v"}]}`), http.StatusServiceUnavailable, CodeFenced)
	e.want(e.get("/api/topics/orders/partitions/1/records?offset=0"), http.StatusServiceUnavailable, CodeFenced)
	var info passbook.TopicInfo
	r := e.get("/api/topics/orders")
	r.decode(t, &info)
	if len(info.Partitions) != 2 || info.Partitions[0].Fenced != "" || !strings.Contains(info.Partitions[1].Fenced, "offset") {
		t.Fatalf("/api/topics/orders: %s", r.body)
	}
	snapshot := e.openSSE("/api/events", nil).next(t, 5*time.Second)
	if !strings.Contains(snapshot.data, `"fenced":`) {
		t.Fatalf("the dashboard's snapshot does not say the partition is fenced: %s", snapshot.data)
	}
	if r := e.get("/readyz"); r.status != http.StatusServiceUnavailable || !strings.Contains(string(r.body), `"state":"fenced"`) {
		t.Fatalf("/readyz = %d %s", r.status, r.body)
	}
}

// fencedEnv serves a data directory whose topic "orders" has two
// partitions of 100 records over several segments, partition 1 fenced
// (a segment file removed before the open). before, if set, runs on
// the directory first (to commit offsets, say).
func fencedEnv(t *testing.T, before func(*passbook.DB)) *env {
	t.Helper()
	dir := t.TempDir()
	db, err := passbook.Open(dir, &passbook.Options{MinSegmentBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	topic, err := db.CreateTopic("orders", passbook.TopicConfig{Partitions: 2, SegmentBytes: 1 << 10})
	if err != nil {
		t.Fatal(err)
	}
	for range 100 { // one batch each, over several segments
		for p := range int32(2) {
			if _, err := topic.AppendTo(p, []passbook.Record{{Value: []byte("a record of some length")}}, storage.InOS); err != nil {
				t.Fatal(err)
			}
		}
	}
	if before != nil {
		before(db)
	}
	db.Close()
	segs, _ := filepath.Glob(filepath.Join(dir, "topics", "orders", "1", "*.log"))
	slices.Sort(segs)
	if len(segs) < 3 {
		t.Fatalf("%d segments", len(segs))
	}
	os.Remove(segs[1]) // partition 1 is fenced at the next open

	db, err = passbook.Open(dir, &passbook.Options{MinSegmentBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	s := NewServer(db, &Options{EventInterval: 50 * time.Millisecond})
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	t.Cleanup(func() { s.Close() })
	return &env{t: t, db: db, s: s, ts: ts, url: ts.URL}
}
