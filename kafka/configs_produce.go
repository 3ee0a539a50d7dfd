package kafka

import (
	"github.com/passbook-log/passbook/batch"
	"github.com/passbook-log/passbook/storage"
)

// logAppendTime is the produce response's log_append_time for the batch
// stored at offset first of l: the broker's time stamped in it when the
// topic's message.timestamp.type is LogAppendTime (storage stamps it, so
// the response says exactly what consumers will read, a retried batch's
// included), else −1 as Kafka answers for CreateTime.
func logAppendTime(l *storage.Log, first int64) int64 {
	if !l.Options().LogAppendTime {
		return -1
	}
	ch, err := l.ReadBatches(first, 1)
	if err != nil {
		return -1
	}
	defer ch.Release()
	var hdr [batch.HeaderSize]byte
	if ch.Size < batch.HeaderSize {
		return -1
	}
	if _, err := ch.File.ReadAt(hdr[:], ch.Pos); err != nil {
		return -1
	}
	h, err := batch.ParseHeader(hdr[:])
	if err != nil || h.Attributes&batch.AttrLogAppendTime == 0 {
		return -1
	}
	return h.MaxTimestamp
}
