package storage

import (
	"errors"
	"fmt"
)

var (
	// ErrCorrupt reports stored bytes that fail their checks. Errors that
	// match it are *CorruptError values naming the file and position.
	ErrCorrupt = errors.New("storage: corrupt data")
	// ErrRecordTooLarge reports a record over Options.MaxRecordBytes.
	ErrRecordTooLarge = errors.New("storage: record too large")
	// ErrBatchTooLarge reports a batch over Options.MaxBatchBytes.
	ErrBatchTooLarge = errors.New("storage: batch too large")
	// ErrInvalidBatch reports a batch given to AppendBatch that does not
	// validate (bad CRC, lying length, inconsistent offsets, …).
	ErrInvalidBatch = errors.New("storage: invalid batch")
	// ErrOutOfRange reports an offset outside [log start, head]. Errors
	// that match it are *OutOfRangeError values.
	ErrOutOfRange = errors.New("storage: offset out of range")
	// ErrUnwritable reports an append to a log whose write or fsync
	// failed (a full disk, a read-only file system, no file descriptors
	// left, an I/O error): the log never pretends the write happened,
	// and refuses appends until it recovers (see Log.Health). Kafka
	// answers KAFKA_STORAGE_ERROR.
	ErrUnwritable = errors.New("storage: partition cannot write")
	// ErrClosed reports use of a closed log.
	ErrClosed = errors.New("storage: log closed")
	// ErrNotPartition reports a directory that is not a passbook partition.
	ErrNotPartition = errors.New("storage: not a passbook partition")
	// ErrFormatVersion reports a partition written by an unknown version.
	ErrFormatVersion = errors.New("storage: unknown format version")
	// ErrEmpty reports an append of no records.
	ErrEmpty = errors.New("storage: no records")
	// ErrNoKey reports an append of a record without a key to a
	// compacted log (Options.Compact), which keeps the newest record of
	// each key and so cannot take one. Kafka answers INVALID_RECORD.
	ErrNoKey = errors.New("storage: record without a key on a compacted log")
	// ErrNotCompacted reports Compact called on a log without
	// Options.Compact.
	ErrNotCompacted = errors.New("storage: log is not compacted")
	// ErrInvalidTimestamp reports an append with a timestamp further
	// before or after the log's clock than Options.TimestampBeforeMax or
	// TimestampAfterMax allow. Kafka answers INVALID_TIMESTAMP.
	ErrInvalidTimestamp = errors.New("storage: invalid timestamp")
)

// CorruptError describes corruption found at a position in a file.
type CorruptError struct {
	File string // path of the damaged file
	Pos  int64  // byte position of the damaged batch or entry
	Err  error  // what was wrong
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("storage: corrupt data in %s at byte %d: %v", e.File, e.Pos, e.Err)
}

// Unwrap returns the underlying error.
func (e *CorruptError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrCorrupt) true.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

// OutOfRangeError reports a read outside the records the log holds.
type OutOfRangeError struct {
	Offset int64 // the offset asked for
	Start  int64 // the log start offset: the earliest kept
	Head   int64 // the next offset to be assigned
}

func (e *OutOfRangeError) Error() string {
	if e.Offset >= 0 && e.Offset < e.Start { // a negative offset was never in the log
		return fmt.Sprintf("storage: offset %d is below the log start %d (%d records deleted by retention or DeleteRecords)", e.Offset, e.Start, e.Start-e.Offset)
	}
	return fmt.Sprintf("storage: offset %d is out of range [%d, %d]", e.Offset, e.Start, e.Head)
}

// Is makes errors.Is(err, ErrOutOfRange) true.
func (e *OutOfRangeError) Is(target error) bool { return target == ErrOutOfRange }
