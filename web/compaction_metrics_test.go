package web

import (
	"context"
	"fmt"
	"testing"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/storage"
)

// TestMetrics_Compaction compacts a topic where every key was written
// five times and checks the cleaner's series against its own stats.
func TestMetrics_Compaction(t *testing.T) {
	e := newEnv(t, nil)
	topic, err := e.db.CreateTopic("users", passbook.TopicConfig{CleanupPolicy: passbook.CleanupCompact, SegmentBytes: 4096})
	if err != nil {
		t.Fatal(err)
	}
	for round := range 5 {
		for k := range 50 {
			rec := passbook.Record{Key: fmt.Appendf(nil, "user-%02d", k), Value: fmt.Appendf(nil, "v%d-%s", round, make([]byte, 20))}
			if _, err := topic.AppendTo(0, []passbook.Record{rec}, storage.DefaultDurability); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := topic.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	l, _ := topic.Partition(0)
	st := l.CleanerStats()
	if st.RecordsRemoved == 0 {
		t.Fatalf("the compaction removed nothing: %+v", st)
	}
	fams := e.scrape()
	for _, tc := range []struct {
		name string
		want float64
	}{
		{"passbook_compaction_records_removed_total", float64(st.RecordsRemoved)},
		{"passbook_compaction_bytes_removed_total", float64(st.BytesRemoved)},
		{"passbook_compaction_bytes_cleaned_total", float64(st.BytesCleaned)},
		{"passbook_compaction_runs_total", float64(st.Runs)},
		{"passbook_compaction_cleaned_offset", float64(st.CleanedTo)},
		{"passbook_compaction_keys", float64(st.Last.Keys)},
	} {
		got, ok := value(fams, tc.name, "topic=users", "partition=0")
		if !ok || got != tc.want {
			t.Errorf("%s = %v (present %v), want %v", tc.name, got, ok, tc.want)
		}
	}
	if _, ok := value(fams, "passbook_compaction_runs_total", "topic=orders"); ok {
		t.Error("compaction series for a topic that is not compacted")
	}
}
