package consumer

import (
	"errors"
	"fmt"

	"github.com/passbook-log/passbook/internal/thousands"
	"github.com/passbook-log/passbook/storage"
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

// RangeError reports a starting offset (consume --from, replay --to, the
// Start option, Seek) outside what a partition holds: a consumer can start
// at any offset from the log start to the head, the head meaning "only
// records appended from now on". It matches storage.ErrOutOfRange and
// ErrInvalid under errors.Is: it is bad input, and nothing was changed.
type RangeError struct {
	Topic     string
	Partition int32
	Offset    int64 // the offset asked for
	Start     int64 // the log start offset: the earliest record kept
	Head      int64 // the next offset to be assigned
	// Option is how the caller's user names the choice, e.g. "--from"
	// (the suggestion then reads "use --from earliest (0) …"); empty:
	// plain earliest and latest.
	Option string
}

func (e *RangeError) Error() string {
	n := thousands.Int[int64]
	var held string
	switch {
	case e.Start == e.Head && e.Head == 0:
		held = "it is empty, so the only valid offset is 0"
	case e.Start == e.Head:
		held = fmt.Sprintf("it holds no records now (retention deleted those below %s), so the only valid offset is %s", n(e.Start), n(e.Head))
	default:
		held = fmt.Sprintf("valid offsets are %s to %s (it holds %s to %s; %s is the head, where only new records are read)",
			n(e.Start), n(e.Head), n(e.Start), n(e.Head-1), n(e.Head))
	}
	what := "is past the head"
	switch {
	case e.Offset < 0:
		what = "is negative"
	case e.Offset < e.Start:
		what = fmt.Sprintf("was deleted by retention (the log starts at %s)", n(e.Start))
	}
	opt := ""
	if e.Option != "" {
		opt = e.Option + " "
	}
	return fmt.Sprintf("consumer: offset %s on %s/%d %s: %s; use %searliest (%s) or %slatest (%s) instead",
		n(e.Offset), e.Topic, e.Partition, what, held, opt, n(e.Start), opt, n(e.Head))
}

// Is makes errors.Is(err, storage.ErrOutOfRange) and errors.Is(err,
// ErrInvalid) true.
func (e *RangeError) Is(target error) bool {
	return target == storage.ErrOutOfRange || target == ErrInvalid
}

// Unwrap returns the storage's own description of the range, so that
// errors.As finds a *storage.OutOfRangeError too.
func (e *RangeError) Unwrap() error {
	return &storage.OutOfRangeError{Offset: e.Offset, Start: e.Start, Head: e.Head}
}

// PartitionError reports a partition the topic does not have (or one
// named twice). It matches ErrInvalid.
type PartitionError struct {
	Topic      string
	Partition  int32
	Partitions int   // how many the topic has
	Duplicate  bool  // named more than once
	Err        error // the source's own error for an unknown partition (passbook.ErrUnknownPartition for a *passbook.Topic), if any
}

func (e *PartitionError) Error() string {
	if e.Duplicate {
		return fmt.Sprintf("consumer: partition %d of %s is named twice", e.Partition, e.Topic)
	}
	valid := fmt.Sprintf("its partitions are 0 to %d", e.Partitions-1)
	if e.Partitions == 1 {
		valid = "its only partition is 0"
	}
	return fmt.Sprintf("consumer: topic %s has no partition %d: %s", e.Topic, e.Partition, valid)
}

// Is makes errors.Is(err, ErrInvalid) true.
func (e *PartitionError) Is(target error) bool { return target == ErrInvalid }

// Unwrap returns the source's error, if any.
func (e *PartitionError) Unwrap() error { return e.Err }
