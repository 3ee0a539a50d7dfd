package web

import (
	"github.com/passbook-log/passbook"
	"github.com/prometheus/client_golang/prometheus"
)

// offsetsCollector exposes the offset store's counters (offsets.Stats).
type offsetsCollector struct {
	db                          *passbook.DB
	commits, syncs, unavailable *prometheus.Desc
}

func newOffsetsCollector(db *passbook.DB) *offsetsCollector {
	d := func(name, help string) *prometheus.Desc { return prometheus.NewDesc(name, help, nil, nil) }
	return &offsetsCollector{
		db: db,
		commits: d("passbook_offsets_group_commits_total",
			"Offset store writes (Kafka OffsetCommit, consumers' commits) made durable by a group commit (--offsets-sync group) since the server started."),
		syncs: d("passbook_offsets_wal_fsyncs_total",
			"fsyncs of the offset store's WAL run by group commits: commits per fsync is how many shared each."),
		unavailable: d("passbook_offsets_unavailable",
			"1 when the offset store refuses every call (offsets.db deleted, replaced or truncated under the server, or an fsync of its WAL failed: OffsetCommit answers COORDINATOR_NOT_AVAILABLE, /readyz 503); the log says why. Restart after seeing to it."),
	}
}

func (c *offsetsCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.commits
	ch <- c.syncs
	ch <- c.unavailable
}

func (c *offsetsCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.db.Offsets().Stats()
	unavailable := 0.0
	if st.Unavailable {
		unavailable = 1
	}
	ch <- prometheus.MustNewConstMetric(c.commits, prometheus.CounterValue, float64(st.GroupCommits))
	ch <- prometheus.MustNewConstMetric(c.syncs, prometheus.CounterValue, float64(st.GroupSyncs))
	ch <- prometheus.MustNewConstMetric(c.unavailable, prometheus.GaugeValue, unavailable)
}
