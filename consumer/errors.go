package consumer

import (
	"errors"
	"fmt"
)

var (
	// ErrGap reports that retention deleted records the consumer never
	// read. Errors that match it are *GapError values.
	ErrGap = errors.New("consumer: records deleted before they were read")
	// ErrInvalid reports bad Options or arguments.
	ErrInvalid = errors.New("consumer: invalid argument")
	// ErrClosed reports use of a closed consumer.
	ErrClosed = errors.New("consumer: closed")
)

// GapError says how many records a consumer missed on a partition.
type GapError struct {
	Consumer, Topic string
	Partition       int32
	Committed       int64 // the consumer's committed offset
	Start           int64 // the log start offset now
}

// Missed is the number of records deleted before they were read.
func (e *GapError) Missed() int64 { return e.Start - e.Committed }

func (e *GapError) Error() string {
	return fmt.Sprintf("consumer %s on %s/%d: committed offset %d but the log now starts at %d: %d records were deleted by retention before this consumer read them (choose a reset policy, earliest or latest, to go on)",
		e.Consumer, e.Topic, e.Partition, e.Committed, e.Start, e.Missed())
}

// Is makes errors.Is(err, ErrGap) true.
func (e *GapError) Is(target error) bool { return target == ErrGap }
