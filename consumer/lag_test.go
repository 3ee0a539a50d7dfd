package consumer_test

import (
	"testing"

	"github.com/passbook-log/passbook/consumer"
)

// TestLagOf is the one count of lag that `passbook lag`, the HTTP API,
// /metrics and the dashboard all show.
func TestLagOf(t *testing.T) {
	for _, c := range []struct {
		name                   string
		committed, start, head int64
		lag, missed            int64
	}{
		{"nothing committed: everything kept is lag", -1, 0, 100, 100, 0},
		{"nothing committed after retention: only what is kept", -1, 40, 100, 60, 0},
		{"nothing committed on an empty partition", -1, 0, 0, 0, 0},
		{"caught up", 100, 0, 100, 0, 0},
		{"behind", 42, 0, 100, 58, 0},
		{"at the log start", 40, 40, 100, 60, 0},
		{"retention deleted records it never read", 10, 40, 100, 60, 30},
		{"committed 0 and the first record deleted", 0, 1, 5, 4, 1},
		{"all it never read deleted, the log empty now", 3, 9, 9, 0, 6},
	} {
		t.Run(c.name, func(t *testing.T) {
			lag, missed := consumer.LagOf(c.committed, c.start, c.head)
			if lag != c.lag || missed != c.missed {
				t.Errorf("LagOf(committed %d, start %d, head %d) = lag %d, missed %d; want lag %d, missed %d",
					c.committed, c.start, c.head, lag, missed, c.lag, c.missed)
			}
			pl := consumer.NewPartitionLag("analytics", "orders", 3, c.committed, c.start, c.head)
			want := consumer.PartitionLag{Consumer: "analytics", Topic: "orders", Partition: 3,
				Committed: c.committed, Start: c.start, Head: c.head, Stable: c.head, Lag: c.lag, Missed: c.missed}
			if pl != want {
				t.Errorf("NewPartitionLag = %+v, want %+v", pl, want)
			}
		})
	}
}
