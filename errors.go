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
	// ErrFenced reports a partition that Open could not open (a segment
	// file deleted, corruption in fsync'd bytes, no file descriptor
	// left): the rest of the data directory is served, and this one
	// refuses every append and read until `passbook repair` mends it and
	// the directory is opened again. Kafka answers KAFKA_STORAGE_ERROR.
	ErrFenced = errors.New("passbook: partition fenced")
	// ErrInvalidPartitions reports a partition count AddPartitions
	// cannot give a topic: not above its count, or above MaxPartitions.
	// Kafka answers INVALID_PARTITIONS.
	ErrInvalidPartitions = errors.New("passbook: invalid partition count")
	// ErrCompactOnly reports DeleteRecords on a topic whose cleanup
	// policy is compact alone: its records go by compaction, key by key,
	// as in Kafka (POLICY_VIOLATION); compact,delete allows it.
	ErrCompactOnly = errors.New("passbook: records of a compact topic are deleted by compaction only")
	// ErrClosed reports use of a closed DB.
	ErrClosed = errors.New("passbook: closed")
)
