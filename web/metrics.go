package web

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/passbook-log/passbook/consumer"
	"github.com/passbook-log/passbook/offsets"
	"github.com/passbook-log/passbook/storage"
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the server's own instruments, in its registry. The state of
// the logs and the consumers is read at scrape time by stateCollector.
type metrics struct {
	appendRecords  *prometheus.CounterVec   // topic
	appendBytes    *prometheus.CounterVec   // topic
	appendSeconds  prometheus.Histogram     //
	readRecords    *prometheus.CounterVec   // topic
	readBytes      *prometheus.CounterVec   // topic
	requests       *prometheus.CounterVec   // route, method, code
	requestSeconds *prometheus.HistogramVec // route
	streams        prometheus.Gauge

	// The limits (limits.go).
	conns          prometheus.Gauge
	connRefused    prometheus.Counter
	connEvicted    prometheus.Counter
	streamsRefused prometheus.Counter
	streamsDropped *prometheus.CounterVec // reason
	throttled      prometheus.Counter
	bodyTimeouts   prometheus.Counter
}

// latencyBuckets span 50 µs to 10 s: appends in the OS take microseconds,
// fsync'd ones milliseconds.
func latencyBuckets() []float64 { return prometheus.ExponentialBucketsRange(50e-6, 10, 16) }

func newMetrics(s *Server) *metrics {
	m := &metrics{
		appendRecords: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "passbook_http_appended_records_total",
			Help: "Records appended through the HTTP API, per topic.",
		}, []string{"topic"}),
		appendBytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "passbook_http_appended_bytes_total",
			Help: "Key, value and header bytes appended through the HTTP API, per topic.",
		}, []string{"topic"}),
		appendSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "passbook_http_append_duration_seconds",
			Help:    "Time to append one HTTP request's records, until they are as durable as asked.",
			Buckets: latencyBuckets(),
		}),
		readRecords: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "passbook_http_read_records_total",
			Help: "Records served by reads and SSE streams of the HTTP API, per topic.",
		}, []string{"topic"}),
		readBytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "passbook_http_read_bytes_total",
			Help: "Key, value and header bytes served by reads and SSE streams, per topic.",
		}, []string{"topic"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "passbook_http_requests_total",
			Help: "HTTP API requests, by route pattern, method and status code.",
		}, []string{"route", "method", "code"}),
		requestSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "passbook_http_request_duration_seconds",
			Help:    "HTTP API request latency by route pattern (streams and long polls included).",
			Buckets: latencyBuckets(),
		}, []string{"route"}),
		streams: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "passbook_http_sse_streams",
			Help: "Server-Sent Events streams open now (record tails and dashboard events).",
		}),
		conns: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "passbook_http_connections",
			Help: "HTTP connections open now (at most passbook_http_connections_max).",
		}),
		connRefused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "passbook_http_connections_refused_total",
			Help: "HTTP connections answered 503 too_many_connections and closed: over --http-max-connections.",
		}),
		connEvicted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "passbook_http_connections_evicted_total",
			Help: "Idle HTTP connections closed at --http-max-connections to make room for a new one.",
		}),
		streamsRefused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "passbook_http_sse_refused_total",
			Help: "SSE streams refused with 503 too_many_streams: over --http-max-streams.",
		}),
		streamsDropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "passbook_http_sse_dropped_total",
			Help: "SSE subscribers cut for being too slow: buffer_full (a dashboard stream's updates piled up), write_timeout (a write took over --http-stream-write-timeout).",
		}, []string{"reason"}),
		throttled: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "passbook_http_throttled_total",
			Help: "SSE streams and long polls refused with 429 too_many_requests: the client had --http-max-streams-per-client open.",
		}),
		bodyTimeouts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "passbook_http_request_timeouts_total",
			Help: "Request bodies cut by --http-read-timeout (answered 408 request_timeout).",
		}),
	}
	for _, r := range []string{"buffer_full", "write_timeout"} {
		m.streamsDropped.WithLabelValues(r)
	}
	limit := func(name, help string, v int) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 { return float64(v) })
	}
	s.reg.MustRegister(m.appendRecords, m.appendBytes, m.appendSeconds, m.readRecords, m.readBytes,
		m.requests, m.requestSeconds, m.streams, newStateCollector(s),
		m.conns, m.connRefused, m.connEvicted, m.streamsRefused, m.streamsDropped, m.throttled, m.bodyTimeouts,
		limit("passbook_http_connections_max", "The limit of HTTP connections open at once (--http-max-connections).", s.o.MaxConnections),
		limit("passbook_http_sse_streams_max", "The limit of SSE streams open at once (--http-max-streams).", s.o.MaxStreams))
	if s.o.SyncTimer != nil {
		s.reg.MustRegister(s.o.SyncTimer)
	}
	s.reg.MustRegister(newFileCollector(s.db))
	s.reg.MustRegister(newHealthCollector(s.db))
	s.reg.MustRegister(newOffsetsCollector(s.db))
	return m
}

// forgetTopic drops a deleted topic's series.
func (m *metrics) forgetTopic(topic string) {
	for _, v := range []*prometheus.CounterVec{m.appendRecords, m.appendBytes, m.readRecords, m.readBytes} {
		v.DeletePartialMatch(prometheus.Labels{"topic": topic})
	}
}

func (m *metrics) instrument(route string, h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		began := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		h(sw, r)
		if sw.status == 0 {
			sw.status = http.StatusOK
		}
		m.requests.WithLabelValues(route, r.Method, strconv.Itoa(sw.status)).Inc()
		m.requestSeconds.WithLabelValues(route).Observe(time.Since(began).Seconds())
	})
}

// statusWriter remembers the status code; Unwrap lets
// http.ResponseController reach Flush and deadlines underneath.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Flush lets plain http.Flusher checks work too.
func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// stateCollector reads the logs' extents, the recovery report and every
// consumer's lag when /metrics is scraped, so the figures are those of
// the moment and cost nothing between scrapes.
type stateCollector struct {
	s *Server

	appended, head, start, bytes, segments, recovery *prometheus.Desc
	recoveryTotal, torn, committed, lag, missed, up  *prometheus.Desc

	// The cleaner of compacted topics.
	cleanedTo, dirtyRatio, cleanRuns, cleanBytes, cleanRemoved *prometheus.Desc
	cleanRecords, cleanSeconds, cleanKeys                      *prometheus.Desc
	refused                                                    *prometheus.Desc
}

func newStateCollector(s *Server) *stateCollector {
	part := []string{"topic", "partition"}
	cons := []string{"consumer", "topic", "partition"}
	return &stateCollector{
		s: s,
		appended: prometheus.NewDesc("passbook_topic_appended_records_total",
			"Records ever appended to the topic by any path (library, Kafka, HTTP): the sum of its partitions' heads.",
			[]string{"topic"}, nil),
		head: prometheus.NewDesc("passbook_partition_head_offset",
			"The next offset the partition will assign (high watermark).", part, nil),
		start: prometheus.NewDesc("passbook_partition_start_offset",
			"The earliest offset the partition still keeps after retention.", part, nil),
		bytes: prometheus.NewDesc("passbook_partition_bytes",
			"Bytes of the partition's segment files.", part, nil),
		segments: prometheus.NewDesc("passbook_partition_segments",
			"Segments of the partition, the active one included.", part, nil),
		recovery: prometheus.NewDesc("passbook_partition_recovery_seconds",
			"Time the partition's open spent recovering (re-validating the tail after a crash).", part, nil),
		recoveryTotal: prometheus.NewDesc("passbook_recovery_seconds",
			"Time spent recovering the partitions open now, summed.", nil, nil),
		torn: prometheus.NewDesc("passbook_recovery_torn_bytes",
			"Bytes of torn tails truncated when the partitions open now were opened.", nil, nil),
		committed: prometheus.NewDesc("passbook_consumer_committed_offset",
			"The consumer's committed offset: the next offset it will read.", cons, nil),
		lag: prometheus.NewDesc("passbook_consumer_lag_records",
			"Records between the consumer's committed offset and the head: head − max(committed, log start), or head − log start on a partition with nothing committed; no series on a fenced partition.", cons, nil),
		missed: prometheus.NewDesc("passbook_consumer_missed_records",
			"Records retention deleted before the consumer read them.", cons, nil),
		up: prometheus.NewDesc("passbook_offset_store_up",
			"1 if the offset store answered the scrape's query, else 0 (and no consumer series).", nil, nil),
		cleanedTo: prometheus.NewDesc("passbook_compaction_cleaned_offset",
			"Compacted topics: the first offset not yet cleaned; below it each key has only its newest record.", part, nil),
		dirtyRatio: prometheus.NewDesc("passbook_compaction_dirty_ratio",
			"Compacted topics: the share of the closed segments' bytes not yet cleaned.", part, nil),
		cleanRuns: prometheus.NewDesc("passbook_compaction_runs_total",
			"Compacted topics: compactions run since the partition was opened.", part, nil),
		cleanBytes: prometheus.NewDesc("passbook_compaction_bytes_cleaned_total",
			"Compacted topics: bytes of segments the cleaner read and rewrote.", part, nil),
		cleanRemoved: prometheus.NewDesc("passbook_compaction_bytes_removed_total",
			"Compacted topics: bytes the cleaner removed.", part, nil),
		cleanRecords: prometheus.NewDesc("passbook_compaction_records_removed_total",
			"Compacted topics: records (superseded values and expired tombstones) the cleaner removed.", part, nil),
		cleanSeconds: prometheus.NewDesc("passbook_compaction_seconds_total",
			"Compacted topics: time the cleaner spent compacting.", part, nil),
		refused: prometheus.NewDesc("passbook_topic_refused_appends_total",
			"Appends refused for what they held, per topic, by reason: invalid_record (CORRUPT_MESSAGE or INVALID_RECORD: bad CRC or framing, counts the bytes cannot hold), too_large (MESSAGE_TOO_LARGE: over max.message.bytes, headers included), invalid_timestamp (INVALID_TIMESTAMP: outside message.timestamp.before.max.ms / after.max.ms).",
			[]string{"topic", "reason"}, nil),
		cleanKeys: prometheus.NewDesc("passbook_compaction_keys",
			"Compacted topics: distinct keys the last compaction saw.", part, nil),
	}
}

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.appended, c.head, c.start, c.bytes, c.segments,
		c.recovery, c.recoveryTotal, c.torn, c.committed, c.lag, c.missed, c.up,
		c.cleanedTo, c.dirtyRatio, c.cleanRuns, c.cleanBytes, c.cleanRemoved, c.cleanRecords, c.cleanSeconds, c.cleanKeys, c.refused} {
		ch <- d
	}
}

func (c *stateCollector) collectCleaner(ch chan<- prometheus.Metric, st storage.CleanerStats, topic, p string) {
	gauge := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, topic, p)
	}
	counter := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, topic, p)
	}
	gauge(c.cleanedTo, float64(st.CleanedTo))
	gauge(c.dirtyRatio, st.DirtyRatio)
	gauge(c.cleanKeys, float64(st.Last.Keys))
	counter(c.cleanRuns, float64(st.Runs))
	counter(c.cleanBytes, float64(st.BytesCleaned))
	counter(c.cleanRemoved, float64(st.BytesRemoved))
	counter(c.cleanRecords, float64(st.RecordsRemoved))
	counter(c.cleanSeconds, st.Duration.Seconds())
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	type extent struct {
		start, head, stable int64 // stable: the last stable offset, which lag counts to
		open                bool  // false: fenced, no extent to count lag from
	}
	extents := map[string][]extent{}
	var recovery time.Duration
	var torn int64
	for _, t := range c.s.db.Topics() {
		name := t.Name()
		var sum int64
		var refused storage.Refused
		ext := make([]extent, t.Partitions())
		for p := range t.Partitions() {
			l, err := t.Partition(int32(p))
			if err != nil {
				continue
			}
			ps := strconv.Itoa(p)
			r := l.Refused()
			refused.InvalidRecord += r.InvalidRecord
			refused.TooLarge += r.TooLarge
			refused.InvalidTimestamp += r.InvalidTimestamp
			ext[p] = extent{l.StartOffset(), l.Head(), l.LastStableOffset(), true}
			sum += ext[p].head
			rec := l.Recovery()
			recovery += rec.Duration
			torn += rec.TornBytes
			ch <- prometheus.MustNewConstMetric(c.head, prometheus.GaugeValue, float64(ext[p].head), name, ps)
			ch <- prometheus.MustNewConstMetric(c.start, prometheus.GaugeValue, float64(ext[p].start), name, ps)
			ch <- prometheus.MustNewConstMetric(c.bytes, prometheus.GaugeValue, float64(l.Size()), name, ps)
			ch <- prometheus.MustNewConstMetric(c.segments, prometheus.GaugeValue, float64(l.SegmentCount()), name, ps)
			ch <- prometheus.MustNewConstMetric(c.recovery, prometheus.GaugeValue, rec.Duration.Seconds(), name, ps)
			if t.Config().Compacted() {
				c.collectCleaner(ch, l.CleanerStats(), name, ps)
			}
		}
		extents[name] = ext
		ch <- prometheus.MustNewConstMetric(c.appended, prometheus.CounterValue, float64(sum), name)
		ch <- prometheus.MustNewConstMetric(c.refused, prometheus.CounterValue, float64(refused.InvalidRecord), name, "invalid_record")
		ch <- prometheus.MustNewConstMetric(c.refused, prometheus.CounterValue, float64(refused.TooLarge), name, "too_large")
		ch <- prometheus.MustNewConstMetric(c.refused, prometheus.CounterValue, float64(refused.InvalidTimestamp), name, "invalid_timestamp")
	}
	ch <- prometheus.MustNewConstMetric(c.recoveryTotal, prometheus.GaugeValue, recovery.Seconds())
	ch <- prometheus.MustNewConstMetric(c.torn, prometheus.GaugeValue, float64(torn))

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	entries, err := c.s.db.Offsets().List(ctx, offsets.Filter{})
	if err != nil {
		if !errors.Is(err, offsets.ErrClosed) {
			c.s.log.Warn("metrics: list committed offsets", "err", err)
		}
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 1)
	// Lag counted by consumer.LagOf, as `passbook lag` counts it: on
	// every partition of a topic the consumer has committed on, a
	// partition with nothing committed lagging by all it keeps.
	for i := 0; i < len(entries); {
		j := i
		for j < len(entries) && entries[j].Consumer == entries[i].Consumer && entries[j].Topic == entries[i].Topic {
			j++
		}
		group := entries[i:j]
		i = j
		cons, topic := group[0].Consumer, group[0].Topic
		ext, ok := extents[topic]
		if !ok {
			continue // offsets of a deleted topic
		}
		committed := map[int32]int64{}
		for _, e := range group {
			committed[e.Partition] = e.Offset
		}
		for p, x := range ext {
			ps := strconv.Itoa(p)
			off, ok := committed[int32(p)]
			if ok {
				ch <- prometheus.MustNewConstMetric(c.committed, prometheus.GaugeValue, float64(off), cons, topic, ps)
			} else {
				off = -1
			}
			if !x.open {
				continue // a fenced partition: its lag is not known
			}
			lag, missed := consumer.LagOf(off, x.start, x.stable)
			ch <- prometheus.MustNewConstMetric(c.lag, prometheus.GaugeValue, float64(lag), cons, topic, ps)
			if ok {
				ch <- prometheus.MustNewConstMetric(c.missed, prometheus.GaugeValue, float64(missed), cons, topic, ps)
			}
		}
	}
}
