package web

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/offsets"
	"github.com/passbook-log/passbook/storage"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrape reads /metrics as Prometheus would.
func (e *env) scrape() map[string]*dto.MetricFamily {
	e.t.Helper()
	r := e.get("/metrics")
	if r.status != http.StatusOK {
		e.t.Fatalf("/metrics: %d\n%s", r.status, r.body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(r.body))
	if err != nil {
		e.t.Fatalf("parse /metrics: %v", err)
	}
	return fams
}

// value returns the value of the series of family name with the labels
// given as "k=v" pairs, and whether it exists.
func value(fams map[string]*dto.MetricFamily, name string, labels ...string) (float64, bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
next:
	for _, m := range f.Metric {
		for _, l := range labels {
			k, v, _ := strings.Cut(l, "=")
			found := false
			for _, lp := range m.Label {
				if lp.GetName() == k && lp.GetValue() == v {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		case m.Untyped != nil:
			return m.Untyped.GetValue(), true
		}
	}
	return 0, false
}

func (e *env) wantMetric(fams map[string]*dto.MetricFamily, want float64, name string, labels ...string) {
	e.t.Helper()
	got, ok := value(fams, name, labels...)
	if !ok {
		e.t.Errorf("%s%v: no such series", name, labels)
	} else if got != want {
		e.t.Errorf("%s%v = %v, want %v", name, labels, got, want)
	}
}

// TestMetrics_AppendsAndLag does appends (over HTTP and through the
// library), reads and commits, and checks the scraped counters, extents
// and lags match.
func TestMetrics_AppendsAndLag(t *testing.T) {
	e := newEnv(t, nil)
	topic := e.createTopic("orders", 2)

	// 30 records of 10 bytes over HTTP, in two requests; 20 through the library.
	recs := `{"records": [` + strings.Repeat(`{"value": "0123456789"},`, 19) + `{"value": "0123456789"}]}`
	e.want(e.postJSON("/api/topics/orders/partitions/0/records", recs), http.StatusOK, "")
	e.want(e.do("POST", "/api/topics/orders/partitions/0/records?key=k1&header=h:v", "application/octet-stream", strings.Repeat("x", 100)), http.StatusOK, "")
	e.want(e.postJSON("/api/topics/orders/partitions/0/records", `{"records": [`+strings.Repeat(`{"value": "0123456789"},`, 8)+`{"value": "0123456789"}]}`), http.StatusOK, "")
	fill(t, topic, 1, 20)
	e.read("/api/topics/orders/partitions/0/records?offset=25&limit=5")
	e.want(e.postJSON("/api/consumers/analytics-v2/topics/orders/commit", `{"offsets": [{"partition": 0, "offset": 10}]}`), http.StatusOK, "")
	e.want(e.postJSON("/api/consumers/orders-writer/topics/orders/commit", `{"offsets": [{"partition": 0, "offset": 30}, {"partition": 1, "offset": 20}]}`), http.StatusOK, "")

	fams := e.scrape()
	e.wantMetric(fams, 30, "passbook_http_appended_records_total", "topic=orders")
	e.wantMetric(fams, 29*10+2+2+100, // values, key "k1", header h:v, raw value
		"passbook_http_appended_bytes_total", "topic=orders")
	e.wantMetric(fams, 3, "passbook_http_append_duration_seconds")
	e.wantMetric(fams, 50, "passbook_topic_appended_records_total", "topic=orders")
	e.wantMetric(fams, 30, "passbook_partition_head_offset", "topic=orders", "partition=0")
	e.wantMetric(fams, 20, "passbook_partition_head_offset", "topic=orders", "partition=1")
	e.wantMetric(fams, 0, "passbook_partition_start_offset", "topic=orders", "partition=1")
	e.wantMetric(fams, 1, "passbook_partition_segments", "topic=orders", "partition=0")
	e.wantMetric(fams, float64(topic.Describe().Partitions[1].Bytes), "passbook_partition_bytes", "topic=orders", "partition=1")
	e.wantMetric(fams, 5, "passbook_http_read_records_total", "topic=orders")
	e.wantMetric(fams, 10, "passbook_consumer_committed_offset", "consumer=analytics-v2", "topic=orders", "partition=0")
	e.wantMetric(fams, 20, "passbook_consumer_lag_records", "consumer=analytics-v2", "topic=orders", "partition=0")
	e.wantMetric(fams, 20, "passbook_consumer_lag_records", "consumer=analytics-v2", "topic=orders", "partition=1") // nothing committed
	e.wantMetric(fams, 0, "passbook_consumer_lag_records", "consumer=orders-writer", "topic=orders", "partition=0")
	e.wantMetric(fams, 0, "passbook_consumer_lag_records", "consumer=orders-writer", "topic=orders", "partition=1")
	e.wantMetric(fams, 1, "passbook_offset_store_up")
	e.wantMetric(fams, 1, "passbook_http_requests_total", "route=/api/topics/{topic}/partitions/{partition}/records", "method=GET", "code=200")
	e.wantMetric(fams, 3, "passbook_http_requests_total", "route=/api/topics/{topic}/partitions/{partition}/records", "method=POST", "code=200")
	if _, ok := value(fams, "passbook_consumer_committed_offset", "consumer=analytics-v2", "partition=1"); ok {
		t.Error("a committed offset series for a partition with nothing committed")
	}
	for _, name := range []string{"passbook_recovery_seconds", "passbook_partition_recovery_seconds", "go_goroutines", "process_cpu_seconds_total"} {
		if fams[name] == nil {
			t.Errorf("no %s", name)
		}
	}

	// Five more records: the counters and the lags move with them.
	e.want(e.postJSON("/api/topics/orders/partitions/0/records", `{"records": [`+strings.Repeat(`{"value": "0123456789"},`, 4)+`{"value": "0123456789"}]}`), http.StatusOK, "")
	fams = e.scrape()
	e.wantMetric(fams, 35, "passbook_http_appended_records_total", "topic=orders")
	e.wantMetric(fams, 55, "passbook_topic_appended_records_total", "topic=orders")
	e.wantMetric(fams, 25, "passbook_consumer_lag_records", "consumer=analytics-v2", "topic=orders", "partition=0")
	e.wantMetric(fams, 5, "passbook_consumer_lag_records", "consumer=orders-writer", "topic=orders", "partition=0")

	// A deleted topic's series go.
	e.want(e.do("DELETE", "/api/topics/orders", "", nil), http.StatusNoContent, "")
	fams = e.scrape()
	for _, name := range []string{"passbook_http_appended_records_total", "passbook_topic_appended_records_total", "passbook_consumer_lag_records"} {
		if _, ok := value(fams, name, "topic=orders"); ok {
			t.Errorf("%s still has topic orders after its deletion", name)
		}
	}
}

func TestMetrics_RetentionMissed(t *testing.T) {
	e := newEnv(t, nil)
	topic, err := e.db.CreateTopic("orders", passbook.TopicConfig{SegmentBytes: 1024, RetentionBytes: 2048})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.db.Offsets().Commit(context.Background(), offsetsKey("slow", "orders", 0), 0); err != nil {
		t.Fatal(err)
	}
	fill(t, topic, 0, 2000)
	l, _ := topic.Partition(0)
	l.Retain()
	start, head := l.StartOffset(), l.Head()
	if start == 0 {
		t.Fatal("retention deleted nothing")
	}
	fams := e.scrape()
	e.wantMetric(fams, float64(start), "passbook_partition_start_offset", "topic=orders", "partition=0")
	e.wantMetric(fams, float64(start), "passbook_consumer_missed_records", "consumer=slow", "topic=orders", "partition=0")
	e.wantMetric(fams, float64(head-start), "passbook_consumer_lag_records", "consumer=slow", "topic=orders", "partition=0")
	if segs, _ := value(fams, "passbook_partition_segments", "topic=orders"); segs != float64(l.SegmentCount()) {
		t.Errorf("segments %v, log has %d", segs, l.SegmentCount())
	}
}

func TestMetrics_FsyncLatency(t *testing.T) {
	st := NewSyncTimer(nil)
	e := newEnvDB(t, &passbook.Options{FS: st}, &Options{SyncTimer: st})
	topic := e.createTopic("orders", 1)
	before, _ := value(e.scrape(), "passbook_fsync_duration_seconds", "op=file")
	for range 3 {
		if _, err := topic.AppendTo(0, []passbook.Record{{Value: []byte("x")}}, storage.Fsync); err != nil {
			t.Fatal(err)
		}
	}
	fams := e.scrape()
	after, _ := value(fams, "passbook_fsync_duration_seconds", "op=file")
	if after < before+1 {
		t.Errorf("fsyncs observed went from %v to %v over three fsync'd appends", before, after)
	}
	if n, _ := value(fams, "passbook_fsync_duration_seconds", "op=dir"); n == 0 {
		t.Error("no directory fsync observed, though creating a topic syncs its directory")
	}
}

func TestServer_RegistryIsTheServers(t *testing.T) {
	a := newEnv(t, nil)
	b := newEnv(t, nil)
	if a.s.Registry() == b.s.Registry() {
		t.Fatal("two servers share a registry")
	}
	// Another part of the process adds its collectors; /metrics serves them.
	c := newCounterForTest()
	a.s.Registry().MustRegister(c)
	c.Add(7)
	a.wantMetric(a.scrape(), 7, "passbook_kafka_test_total")
	if _, ok := value(b.scrape(), "passbook_kafka_test_total"); ok {
		t.Error("a collector registered on one server is served by another")
	}
}

func newCounterForTest() prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{Name: "passbook_kafka_test_total", Help: "A collector from elsewhere."})
}

func offsetsKey(consumer, topic string, p int32) offsets.Key {
	return offsets.Key{Consumer: consumer, Topic: topic, Partition: p}
}
