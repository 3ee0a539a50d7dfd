package kafka

import "github.com/prometheus/client_golang/prometheus"

// Collector returns a Prometheus collector of the server's limits, read
// at scrape time from Stats: register it where /metrics is served (with
// `passbook serve --http`, the web server's registry).
func (s *Server) Collector() prometheus.Collector { return &collector{s: s} }

type collector struct{ s *Server }

var (
	descConnections = prometheus.NewDesc("passbook_kafka_connections",
		"Kafka client connections open now.", nil, nil)
	descClosed = prometheus.NewDesc("passbook_kafka_connections_closed_total",
		"Kafka connections closed or refused by a limit, by reason: idle (connections.max.idle.ms), too_large (socket.request.max.bytes), slow_request and slow_response (the request timeout), per_ip_limit (max.connections.per.ip), limit (max.connections), evicted (closed, idle, to make room at a connection limit).",
		[]string{"reason"}, nil)
	descRequestBytes = prometheus.NewDesc("passbook_kafka_request_bytes_in_flight",
		"Memory held by Kafka requests being read and handled; bounded by queued.max.request.bytes.", nil, nil)
	descRequestWaits = prometheus.NewDesc("passbook_kafka_request_bytes_waits_total",
		"Times a connection stopped reading because queued.max.request.bytes was reached.", nil, nil)
	descResponseBytes = prometheus.NewDesc("passbook_kafka_response_bytes_in_flight",
		"Record bytes of Kafka fetch responses being built and written; bounded by queued.max.response.bytes.", nil, nil)
	descResponseWaits = prometheus.NewDesc("passbook_kafka_response_bytes_waits_total",
		"Times a fetch waited, or returned less, because queued.max.response.bytes was reached.", nil, nil)
	descFetchCapped = prometheus.NewDesc("passbook_kafka_fetch_bytes_capped_total",
		"Fetches whose max_bytes or a partition's max_bytes was lowered to fetch.max.bytes.", nil, nil)
)

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descConnections, descClosed, descRequestBytes, descRequestWaits, descResponseBytes, descResponseWaits, descFetchCapped} {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	st := c.s.Stats()
	ch <- prometheus.MustNewConstMetric(descConnections, prometheus.GaugeValue, float64(st.Connections))
	for _, r := range closeReasons {
		ch <- prometheus.MustNewConstMetric(descClosed, prometheus.CounterValue, float64(st.Closed[r]), r)
	}
	ch <- prometheus.MustNewConstMetric(descRequestBytes, prometheus.GaugeValue, float64(st.RequestBytesInFlight))
	ch <- prometheus.MustNewConstMetric(descRequestWaits, prometheus.CounterValue, float64(st.RequestBytesWaits))
	ch <- prometheus.MustNewConstMetric(descResponseBytes, prometheus.GaugeValue, float64(st.ResponseBytesInFlight))
	ch <- prometheus.MustNewConstMetric(descResponseWaits, prometheus.CounterValue, float64(st.ResponseBytesWaits))
	ch <- prometheus.MustNewConstMetric(descFetchCapped, prometheus.CounterValue, float64(st.FetchesCapped))
}
