package batch

import "errors"

var (
	// ErrCorrupt reports bytes that are not a valid batch: a bad CRC, a
	// length that disagrees with the data, or records that do not parse.
	ErrCorrupt = errors.New("batch: corrupt")
	// ErrShort reports that fewer bytes were given than the batch needs.
	// At the end of a file it marks a torn (partially written) batch.
	ErrShort = errors.New("batch: short batch")
	// ErrMagic reports a record batch format other than v2 (magic 2).
	ErrMagic = errors.New("batch: unsupported magic")
	// ErrCodec reports an unknown compression codec.
	ErrCodec = errors.New("batch: unknown compression codec")
	// ErrEmpty reports a batch with no records.
	ErrEmpty = errors.New("batch: no records")
)

// ErrTooLarge reports a record over the size limit given to Validate.
var ErrTooLarge = errors.New("batch: record too large")

// ErrNoKey reports a record without a key given to ValidateKeyed.
var ErrNoKey = errors.New("batch: record without a key")

// ErrInvalidRecord reports records that do not parse, or whose counts
// (records, headers) or lengths claim more than the bytes hold: Kafka's
// InvalidRecordException (INVALID_RECORD). Every such error is also an
// ErrCorrupt.
var ErrInvalidRecord = errors.New("batch: invalid record")
