package passbook

import "errors"

var (
	// ErrUnknownTopic reports a topic that does not exist.
	ErrUnknownTopic = errors.New("passbook: unknown topic")
	// ErrTopicExists reports creating a topic that already exists.
	ErrTopicExists = errors.New("passbook: topic already exists")
	// ErrInvalidName reports a topic name that is not allowed.
	ErrInvalidName = errors.New("passbook: invalid topic name")
	// ErrInvalidConfig reports a topic configuration that is not allowed.
	ErrInvalidConfig = errors.New("passbook: invalid topic configuration")
	// ErrUnknownPartition reports a partition the topic does not have.
	ErrUnknownPartition = errors.New("passbook: unknown partition")
	// ErrNoDataDir reports a data directory that does not exist, from an
	// Open with Options.NoCreate.
	ErrNoDataDir = errors.New("passbook: no data directory")
	// ErrClosed reports use of a closed DB.
	ErrClosed = errors.New("passbook: closed")
)
