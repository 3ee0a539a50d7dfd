package web

import (
	"github.com/passbook-log/passbook"
	"github.com/prometheus/client_golang/prometheus"
)

// healthCollector exposes, at scrape time, the partitions that are fenced
// or cannot write (passbook.DB.HealthStats): the same ones /readyz lists.
type healthCollector struct {
	db                           *passbook.DB
	failures, unwritable, fenced *prometheus.Desc
}

func newHealthCollector(db *passbook.DB) *healthCollector {
	d := func(name, help string) *prometheus.Desc { return prometheus.NewDesc(name, help, nil, nil) }
	return &healthCollector{
		db: db,
		failures: d("passbook_partition_write_failures_total",
			"Times a partition's write failed (disk full, read-only file system, no file descriptors, I/O error) and it began refusing appends, since it was opened."),
		unwritable: d("passbook_partitions_unwritable",
			"Partitions refusing appends now after a failed write (KAFKA_STORAGE_ERROR); they retry by themselves unless an fsync failed. /readyz lists them."),
		fenced: d("passbook_partitions_fenced",
			"Partitions that could not be opened (a segment file missing, corruption in fsync'd bytes) and serve nothing until repaired: passbook verify, passbook repair, restart. /readyz lists them."),
	}
}

func (c *healthCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.failures
	ch <- c.unwritable
	ch <- c.fenced
}

func (c *healthCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.db.HealthStats()
	ch <- prometheus.MustNewConstMetric(c.failures, prometheus.CounterValue, float64(st.Failures))
	ch <- prometheus.MustNewConstMetric(c.unwritable, prometheus.GaugeValue, float64(st.Unwritable))
	ch <- prometheus.MustNewConstMetric(c.fenced, prometheus.GaugeValue, float64(st.Fenced))
}
