package passbook

import (
	"fmt"
)

// HighWatermark, as DeleteRecords' offset, means the partition's head:
// every record it holds now is deleted (Kafka's −1).
const HighWatermark = -1

// DeleteRecords deletes partition p's records below offset by moving its
// log start offset there for good (storage.Log.DeleteRecords): readers
// below it are told, as below retention's start (storage.ErrOutOfRange,
// a consumer's reset policy applies), and segments wholly below it are
// deleted. offset HighWatermark means the head. An offset past the head
// is storage.ErrOutOfRange; one at or below the start changes nothing.
// A topic whose cleanup policy is compact alone refuses it
// (ErrCompactOnly), as Kafka does.
// It returns the partition's log start offset now (Kafka's low
// watermark), fsync'd when it returns. It is Kafka's DeleteRecords.
//
// Committed offsets below the new start are left as they are: their
// consumers are told when they next read, as after retention.
func (t *Topic) DeleteRecords(p int32, offset int64) (int64, error) {
	l, err := t.Partition(p)
	if err != nil {
		return 0, err
	}
	if t.cfg.CleanupPolicy == CleanupCompact {
		return l.StartOffset(), fmt.Errorf("%w: topic %s has cleanup.policy compact (compact,delete allows DeleteRecords)", ErrCompactOnly, t.name)
	}
	if offset == HighWatermark {
		offset = l.Head()
	}
	start, err := l.DeleteRecords(offset)
	if err != nil {
		return start, fmt.Errorf("topic %s partition %d: %w", t.name, p, err)
	}
	return start, nil
}
