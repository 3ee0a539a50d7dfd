package passbook

import (
	"iter"

	"github.com/passbook-log/passbook/storage"
)

// Reading with an isolation level, as Kafka's isolation.level: the
// embedded reader reads committed data by default (Topic.Records, and
// consumer.Options.Isolation's zero value), which on a partition that
// never held a transaction is every record up to the head.

// RecordsIsolated iterates over partition p's records from offset from:
// with storage.ReadCommitted up to the last stable offset, without the
// records of aborted transactions; with storage.ReadUncommitted every
// record up to the head. Transaction markers (control records) are never
// yielded; offsets skip them.
func (t *Topic) RecordsIsolated(p int32, from int64, i storage.Isolation) iter.Seq2[Record, error] {
	l, err := t.Partition(p)
	if err != nil {
		return func(yield func(Record, error) bool) { yield(Record{}, err) }
	}
	return l.RecordsIsolated(from, i)
}

// LastStableOffset is partition p's last stable offset: the first offset
// of its oldest open transaction, or its head when none is open. A
// read_committed reader reads below it.
func (t *Topic) LastStableOffset(p int32) (int64, error) {
	l, err := t.Partition(p)
	if err != nil {
		return 0, err
	}
	return l.LastStableOffset(), nil
}
