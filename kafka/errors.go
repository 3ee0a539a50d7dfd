package kafka

import (
	"errors"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/batch"
	"github.com/passbook-log/passbook/storage"
	"github.com/twmb/franz-go/pkg/kerr"
)

var (
	// ErrServerClosed is returned by Serve after Shutdown.
	ErrServerClosed = errors.New("kafka: server closed")
	// ErrRequestTooLarge reports a request frame over
	// Options.SocketRequestMaxBytes (socket.request.max.bytes); the
	// connection that sent it is closed.
	ErrRequestTooLarge = errors.New("kafka: request too large")
	// ErrMalformed reports a request that does not decode; the connection
	// that sent it is closed.
	ErrMalformed = errors.New("kafka: malformed request")
	// ErrUnsupported reports an API key or version the server does not
	// serve; the connection that sent it is closed.
	ErrUnsupported = errors.New("kafka: unsupported API key or version")

	// errTopicDenied is a topic the ACLs do not let the client use
	// (TOPIC_AUTHORIZATION_FAILED).
	errTopicDenied = errors.New("kafka: topic authorization failed")

	// errControlBatch refuses a produced transaction marker.
	errControlBatch = errors.New("kafka: a producer may not send a control batch")
)

// errorCode maps an error of the embedded API or the storage engine to
// the Kafka error code a client understands.
func errorCode(err error) int16 {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errTopicDenied):
		return kerr.TopicAuthorizationFailed.Code
	case errors.Is(err, passbook.ErrFenced), errors.Is(err, storage.ErrUnwritable):
		// A partition Open could not open, or whose write failed.
		return kerr.KafkaStorageError.Code
	case errors.Is(err, passbook.ErrUnknownTopic), errors.Is(err, passbook.ErrUnknownPartition):
		return kerr.UnknownTopicOrPartition.Code
	case errors.Is(err, passbook.ErrInvalidName):
		return kerr.InvalidTopicException.Code
	case errors.Is(err, passbook.ErrTopicExists):
		return kerr.TopicAlreadyExists.Code
	case errors.Is(err, passbook.ErrInvalidConfig):
		return kerr.InvalidConfig.Code
	case errors.Is(err, storage.ErrOutOfRange):
		return kerr.OffsetOutOfRange.Code
	case errors.Is(err, storage.ErrRecordTooLarge), errors.Is(err, storage.ErrBatchTooLarge):
		return kerr.MessageTooLarge.Code
	case errors.Is(err, batch.ErrMagic):
		return kerr.UnsupportedForMessageFormat.Code
	case errors.Is(err, batch.ErrCodec):
		return kerr.UnsupportedCompressionType.Code
	case errors.Is(err, errOutOfOrderSequence):
		return kerr.OutOfOrderSequenceNumber.Code
	case errors.Is(err, errProducerEpoch):
		return kerr.InvalidProducerEpoch.Code
	case errors.Is(err, errTxnState):
		return kerr.InvalidTxnState.Code
	case errors.Is(err, batch.ErrEmpty), errors.Is(err, storage.ErrEmpty), errors.Is(err, errControlBatch), errors.Is(err, storage.ErrNoKey):
		return kerr.InvalidRecord.Code
	case errors.Is(err, storage.ErrInvalidTimestamp):
		return kerr.InvalidTimestamp.Code
	case errors.Is(err, batch.ErrInvalidRecord):
		// Records that do not parse, or whose counts claim more than the
		// bytes hold: Kafka's InvalidRecordException. A bad CRC or
		// framing stays CORRUPT_MESSAGE.
		return kerr.InvalidRecord.Code
	case errors.Is(err, storage.ErrInvalidBatch):
		return kerr.CorruptMessage.Code
	case errors.Is(err, storage.ErrCorrupt):
		return kerr.KafkaStorageError.Code
	case errors.Is(err, storage.ErrClosed), errors.Is(err, passbook.ErrClosed):
		// A topic deleted or a server stopping under the request: the
		// client refreshes its metadata and retries.
		return kerr.NotLeaderForPartition.Code
	}
	return kerr.UnknownServerError.Code
}

// errorMessage is the text for a response's error message field: nil
// when there is no error.
func errorMessage(err error) *string {
	if err == nil {
		return nil
	}
	s := err.Error()
	return &s
}
