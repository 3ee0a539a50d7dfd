package kafka

import (
	"slices"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Collector returns a Prometheus collector of the server's limits and
// security (authentications, sessions, TLS handshakes, ACL denials),
// read at scrape time from Stats and the security counters: register it where /metrics is served (with
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
	descRequestPooled = prometheus.NewDesc("passbook_kafka_request_bytes_pooled",
		"Memory of idle Kafka request buffers kept for reuse; queued.max.request.bytes counts it too, and a request that needs it takes it before waiting.", nil, nil)
	descRequestWaits = prometheus.NewDesc("passbook_kafka_request_bytes_waits_total",
		"Times a connection stopped reading because queued.max.request.bytes was reached.", nil, nil)
	descResponseBytes = prometheus.NewDesc("passbook_kafka_response_bytes_in_flight",
		"Record bytes of Kafka fetch responses being built and written; bounded by queued.max.response.bytes.", nil, nil)
	descResponseWaits = prometheus.NewDesc("passbook_kafka_response_bytes_waits_total",
		"Times a fetch waited, or returned less, because queued.max.response.bytes was reached.", nil, nil)
	descFetchCapped = prometheus.NewDesc("passbook_kafka_fetch_bytes_capped_total",
		"Fetches whose max_bytes or a partition's max_bytes was lowered to fetch.max.bytes.", nil, nil)
	descFetchSendfile = prometheus.NewDesc("passbook_kafka_fetch_sendfile_bytes_total",
		"Record bytes of fetch responses sent from the segment files with sendfile(2), not through the server's memory (plain TCP connections on Linux).", nil, nil)

	descAuthentications = prometheus.NewDesc("passbook_kafka_authentications_total",
		"Kafka SASL authentications (not re-authentications), by mechanism (other: one not served) and result (success, failure).",
		[]string{"mechanism", "result"}, nil)
	descReauthentications = prometheus.NewDesc("passbook_kafka_reauthentications_total",
		"Kafka SASL re-authentications on an authenticated connection (KIP-368), by result.", []string{"result"}, nil)
	descSessionsExpired = prometheus.NewDesc("passbook_kafka_sessions_expired_total",
		"Kafka connections closed at a request after their SASL session ended (connections.max.reauth.ms) without re-authentication.", nil, nil)
	descTLSFailures = prometheus.NewDesc("passbook_kafka_tls_handshake_failures_total",
		"Kafka connections whose TLS handshake failed.", nil, nil)
	descDenied = prometheus.NewDesc("passbook_kafka_authorization_denied_total",
		"Kafka requests, or parts of them (a topic, a group), refused by the ACLs, by API.", []string{"api"}, nil)
)

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descConnections, descClosed, descRequestBytes, descRequestPooled, descRequestWaits, descResponseBytes, descResponseWaits, descFetchCapped, descFetchSendfile,
		descAuthentications, descReauthentications, descSessionsExpired, descTLSFailures, descDenied} {
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
	ch <- prometheus.MustNewConstMetric(descRequestPooled, prometheus.GaugeValue, float64(st.RequestBytesPooled))
	ch <- prometheus.MustNewConstMetric(descRequestWaits, prometheus.CounterValue, float64(st.RequestBytesWaits))
	ch <- prometheus.MustNewConstMetric(descResponseBytes, prometheus.GaugeValue, float64(st.ResponseBytesInFlight))
	ch <- prometheus.MustNewConstMetric(descResponseWaits, prometheus.CounterValue, float64(st.ResponseBytesWaits))
	ch <- prometheus.MustNewConstMetric(descFetchCapped, prometheus.CounterValue, float64(st.FetchesCapped))
	ch <- prometheus.MustNewConstMetric(descFetchSendfile, prometheus.CounterValue, float64(st.FetchSendfileBytes))
	c.s.collectSecurity(ch)
}

// collectSecurity reports the security counters. Authentications are
// reported for the mechanisms served (and other), with both results, so
// that a rate over them starts at zero; denials for each API that has one.
func (s *Server) collectSecurity(ch chan<- prometheus.Metric) {
	sec := &s.sec
	if s.saslOn() {
		for i, m := range allMechanisms {
			if !slices.Contains(s.o.SASLMechanisms, m) {
				continue
			}
			for r, name := range resultNames {
				ch <- prometheus.MustNewConstMetric(descAuthentications, prometheus.CounterValue, float64(sec.auths[i][r].Load()), m, name)
			}
		}
		for r, name := range resultNames {
			ch <- prometheus.MustNewConstMetric(descAuthentications, prometheus.CounterValue, float64(sec.auths[len(allMechanisms)][r].Load()), "other", name)
			ch <- prometheus.MustNewConstMetric(descReauthentications, prometheus.CounterValue, float64(sec.reauths[r].Load()), name)
		}
		ch <- prometheus.MustNewConstMetric(descSessionsExpired, prometheus.CounterValue, float64(sec.expired.Load()))
	}
	if s.o.TLS != nil {
		ch <- prometheus.MustNewConstMetric(descTLSFailures, prometheus.CounterValue, float64(sec.tlsFailed.Load()))
	}
	for k := range sec.denied {
		if n := sec.denied[k].Load(); n > 0 {
			ch <- prometheus.MustNewConstMetric(descDenied, prometheus.CounterValue, float64(n), kmsg.Key(k).Name())
		}
	}
}
