package web

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/consumer"
	"github.com/passbook-log/passbook/offsets"
	"github.com/passbook-log/passbook/storage"
)

// Error codes of the JSON API. They are part of the API: clients match on
// them, so a code never changes meaning. docs/http-api.md lists them.
const (
	CodeBadRequest         = "bad_request"            // 400: a bad parameter
	CodeMalformedJSON      = "malformed_json"         // 400: the body is not the JSON expected
	CodeInvalidName        = "invalid_name"           // 400: a topic or consumer name that is not allowed
	CodeInvalidConfig      = "invalid_config"         // 400: a topic configuration that is not allowed
	CodeNotFound           = "not_found"              // 404: no such route
	CodeUnknownTopic       = "unknown_topic"          // 404
	CodeUnknownPartition   = "unknown_partition"      // 404
	CodeUnknownConsumer    = "unknown_consumer"       // 404: nothing committed under that name
	CodeMethodNotAllowed   = "method_not_allowed"     // 405
	CodeTopicExists        = "topic_exists"           // 409
	CodeLeaseHeld          = "lease_held"             // 409: the consumer is running elsewhere
	CodeBodyTooLarge       = "body_too_large"         // 413: over Options.MaxBodyBytes or MaxAppendRecords
	CodeRecordTooLarge     = "record_too_large"       // 413: one record over the topic's max.message.bytes
	CodeInvalidTimestamp   = "invalid_timestamp"      // 400: a record stamped outside message.timestamp.before.max.ms / after.max.ms
	CodeUnsupportedMedia   = "unsupported_media_type" // 415
	CodeOutOfRange         = "offset_out_of_range"    // 416: outside [start offset, head]
	CodeGap                = "records_deleted"        // 416: retention deleted records the consumer never read
	CodeUnavailable        = "unavailable"            // 503: the DB is closed or the server shutting down
	CodeRequestTimeout     = "request_timeout"        // 408: the body did not arrive within Options.ReadTimeout
	CodeTooManyRequests    = "too_many_requests"      // 429: over Options.MaxStreamsPerClient (Retry-After)
	CodeTooManyStreams     = "too_many_streams"       // 503: over Options.MaxStreams SSE streams (Retry-After)
	CodeTooManyConnections = "too_many_connections"   // 503: over Options.MaxConnections (Retry-After)
	CodeCorrupt            = "corrupt_data"           // 500: stored data failed its checksum (run passbook verify)
	CodeFenced             = "partition_fenced"       // 503: the partition could not be opened (run passbook verify, then repair)
	CodeUnwritable         = "partition_unwritable"   // 503: a write failed (disk full, read-only, no fds); the partition retries
	CodeInternal           = "internal"               // 500
	CodeMisdirected        = "misdirected_request"    // 421: a Host the server does not answer to (DNS rebinding; --http-allowed-hosts)
	CodeCrossOrigin        = "cross_origin"           // 403: a write from another origin's page
	CodeUnauthorized       = "unauthorized"           // 401: no credentials, or wrong ones
	CodeForbidden          = "forbidden"              // 403: the ACLs do not allow the operation
)

// apiError is an error the API reports as
// {"error":{"code":…,"message":…,"details":…}} with an HTTP status.
type apiError struct {
	Status  int            `json:"-"`
	Code    string         `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details,omitempty"`
	// RetryAfter, if positive, is sent as the Retry-After header (seconds).
	RetryAfter int `json:"-"`
}

func (e *apiError) Error() string { return e.Code + ": " + e.Message }

func errorf(status int, code, format string, args ...any) *apiError {
	return &apiError{Status: status, Code: code, Message: fmt.Sprintf(format, args...)}
}

func badRequest(format string, args ...any) *apiError {
	return errorf(http.StatusBadRequest, CodeBadRequest, format, args...)
}

// toAPIError maps the engine's errors onto codes and statuses.
func toAPIError(err error) *apiError {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	var mbe *http.MaxBytesError
	var oor *storage.OutOfRangeError
	var gap *consumer.GapError
	var ne net.Error
	switch {
	case errors.As(err, &mbe):
		return errorf(http.StatusRequestEntityTooLarge, CodeBodyTooLarge, "request body over %d bytes", mbe.Limit)
	case errors.As(err, &ne) && ne.Timeout():
		return errorf(http.StatusRequestTimeout, CodeRequestTimeout, "the request body did not arrive in time (the server's read timeout, --http-read-timeout)")
	case errors.As(err, &oor):
		e := errorf(http.StatusRequestedRangeNotSatisfiable, CodeOutOfRange, "%s", trimPrefix(oor.Error()))
		e.Details = map[string]any{"offset": oor.Offset, "start_offset": oor.Start, "head": oor.Head}
		return e
	case errors.As(err, &gap):
		e := errorf(http.StatusRequestedRangeNotSatisfiable, CodeGap, "%s", err)
		e.Details = map[string]any{"committed": gap.Committed, "start_offset": gap.Start, "missed": gap.Missed()}
		return e
	case errors.Is(err, passbook.ErrInvalidName):
		return errorf(http.StatusBadRequest, CodeInvalidName, "%s", trimPrefix(err.Error()))
	case errors.Is(err, passbook.ErrInvalidConfig):
		return errorf(http.StatusBadRequest, CodeInvalidConfig, "%s", trimPrefix(err.Error()))
	case errors.Is(err, passbook.ErrUnknownTopic):
		return errorf(http.StatusNotFound, CodeUnknownTopic, "%s", trimPrefix(err.Error()))
	case errors.Is(err, passbook.ErrUnknownPartition):
		return errorf(http.StatusNotFound, CodeUnknownPartition, "%s", trimPrefix(err.Error()))
	case errors.Is(err, passbook.ErrTopicExists):
		return errorf(http.StatusConflict, CodeTopicExists, "%s", trimPrefix(err.Error()))
	case errors.Is(err, offsets.ErrLeaseHeld), errors.Is(err, offsets.ErrFenced):
		return errorf(http.StatusConflict, CodeLeaseHeld, "%s", err)
	case errors.Is(err, storage.ErrRecordTooLarge), errors.Is(err, storage.ErrBatchTooLarge):
		return errorf(http.StatusRequestEntityTooLarge, CodeRecordTooLarge, "%s", err)
	case errors.Is(err, storage.ErrInvalidTimestamp):
		return errorf(http.StatusBadRequest, CodeInvalidTimestamp, "%s", trimPrefix(err.Error()))
	case errors.Is(err, consumer.ErrInvalid), errors.Is(err, offsets.ErrInvalid), errors.Is(err, storage.ErrEmpty):
		return errorf(http.StatusBadRequest, CodeBadRequest, "%s", err)
	case errors.Is(err, passbook.ErrClosed), errors.Is(err, storage.ErrClosed), errors.Is(err, offsets.ErrClosed):
		return errorf(http.StatusServiceUnavailable, CodeUnavailable, "%s", err)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return errorf(http.StatusServiceUnavailable, CodeUnavailable, "request canceled: %s", err)
	case errors.Is(err, passbook.ErrFenced):
		return errorf(http.StatusServiceUnavailable, CodeFenced, "%s", trimPrefix(err.Error()))
	case errors.Is(err, storage.ErrUnwritable):
		return errorf(http.StatusServiceUnavailable, CodeUnwritable, "%s", trimPrefix(err.Error()))
	case errors.Is(err, storage.ErrCorrupt), errors.Is(err, offsets.ErrCorrupt):
		return errorf(http.StatusInternalServerError, CodeCorrupt, "%s (passbook verify reports the damage, passbook repair mends what it can)", err)
	}
	return errorf(http.StatusInternalServerError, CodeInternal, "%s", err)
}

// trimPrefix drops the "passbook: " or "storage: " package prefix, which
// says nothing to an HTTP client.
func trimPrefix(s string) string {
	for _, p := range []string{"passbook: ", "storage: "} {
		if len(s) > len(p) && s[:len(p)] == p {
			return s[len(p):]
		}
	}
	return s
}
