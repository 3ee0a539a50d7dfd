package web

import (
	"github.com/passbook-log/passbook"
	"github.com/prometheus/client_golang/prometheus"
)

// fileCollector exposes the data directory's segment file cache
// (passbook.Options.MaxOpenSegmentFiles, storage.FileCache) at scrape
// time.
type fileCollector struct {
	db                      *passbook.DB
	open, max               *prometheus.Desc
	hits, misses, evictions *prometheus.Desc
}

func newFileCollector(db *passbook.DB) *fileCollector {
	d := func(name, help string) *prometheus.Desc { return prometheus.NewDesc(name, help, nil, nil) }
	return &fileCollector{
		db:        db,
		open:      d("passbook_segment_files_open", "Segment files (log, index, time index) open now, over all partitions."),
		max:       d("passbook_segment_files_open_max", "The bound on open segment files (--max-open-segment-files); 0: none."),
		hits:      d("passbook_segment_file_cache_hits_total", "Uses of a segment file that was open."),
		misses:    d("passbook_segment_file_cache_misses_total", "Uses of a segment file that had to open it."),
		evictions: d("passbook_segment_file_cache_evictions_total", "Segment files closed to stay within --max-open-segment-files."),
	}
}

func (c *fileCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.open, c.max, c.hits, c.misses, c.evictions} {
		ch <- d
	}
}

func (c *fileCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.db.FileStats()
	ch <- prometheus.MustNewConstMetric(c.open, prometheus.GaugeValue, float64(st.Open))
	ch <- prometheus.MustNewConstMetric(c.max, prometheus.GaugeValue, float64(st.Max))
	ch <- prometheus.MustNewConstMetric(c.hits, prometheus.CounterValue, float64(st.Hits))
	ch <- prometheus.MustNewConstMetric(c.misses, prometheus.CounterValue, float64(st.Misses))
	ch <- prometheus.MustNewConstMetric(c.evictions, prometheus.CounterValue, float64(st.Evictions))
}
