package storage

import (
	"errors"
	"sync/atomic"

	"github.com/passbook-log/passbook/batch"
)

// Refused counts the appends a log refused because of what they held,
// by reason, since it was opened.
type Refused struct {
	InvalidRecord    int64 // ErrInvalidBatch: bad CRC or framing, records that do not parse, counts the bytes cannot hold
	TooLarge         int64 // ErrRecordTooLarge or ErrBatchTooLarge: over max.message.bytes (headers count)
	InvalidTimestamp int64 // ErrInvalidTimestamp: outside message.timestamp.before/after.max.ms
}

type refusedCounters struct{ invalid, large, timestamp atomic.Int64 }

// Refused returns the counts of appends refused for their content.
func (l *Log) Refused() Refused {
	return Refused{
		InvalidRecord:    l.refused.invalid.Load(),
		TooLarge:         l.refused.large.Load(),
		InvalidTimestamp: l.refused.timestamp.Load(),
	}
}

// refuse counts err, an append's refusal, and returns it. The first
// refusal of each reason is logged as a warning; the others are counted
// only, so that a hostile client cannot flood the log.
func (l *Log) refuse(err error) error {
	var c *atomic.Int64
	var reason string
	switch {
	case errors.Is(err, ErrInvalidTimestamp):
		c, reason = &l.refused.timestamp, "invalid timestamp"
	case errors.Is(err, ErrRecordTooLarge), errors.Is(err, ErrBatchTooLarge):
		c, reason = &l.refused.large, "too large"
	case errors.Is(err, ErrInvalidBatch), errors.Is(err, batch.ErrCorrupt):
		c, reason = &l.refused.invalid, "invalid records"
	default:
		return err
	}
	if c.Add(1) == 1 {
		l.o.Logger.Warn("refused an append (later refusals for this reason are counted, not logged)",
			"dir", l.dir, "reason", reason, "err", err)
	}
	return err
}
