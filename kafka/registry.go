package kafka

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// A handler serves one API key over a range of versions. Each lives in
// its own file named for the key (00_produce.go, 01_fetch.go, …) and
// registers itself from an init function; ApiVersions answers from this
// table, so adding an API is adding a file.
type handler struct {
	key      kmsg.Key
	min, max int16
	serve    func(ctx context.Context, c *conn, req kmsg.Request) (reply, error)
}

// handlers is indexed by API key; it is written only by init functions.
var handlers [maxKey]*handler

const maxKey = 128

// register adds the handler for key. fn receives requests already
// decoded into Req, at a version within [min, max].
func register[Req kmsg.Request](key kmsg.Key, min, max int16, fn func(context.Context, *conn, Req) (reply, error)) {
	if key < 0 || key >= maxKey || handlers[key] != nil {
		panic(fmt.Sprintf("kafka: API key %d registered twice or out of range", key))
	}
	if r := key.Request(); r == nil || max > r.MaxVersion() || min < 0 || min > max {
		panic(fmt.Sprintf("kafka: bad version range %d–%d for API key %d", min, max, key))
	}
	handlers[key] = &handler{key: key, min: min, max: max, serve: func(ctx context.Context, c *conn, req kmsg.Request) (reply, error) {
		return fn(ctx, c, req.(Req))
	}}
}

// lookup returns the handler for key, or nil.
func lookup(key int16) *handler {
	if key < 0 || key >= maxKey {
		return nil
	}
	return handlers[key]
}

// reply is a handler's answer to one request.
type reply struct {
	// resp is written back to the client, in request order; nil writes
	// nothing (a Produce with acks=0).
	resp kmsg.Response
	// wait, if set, runs on the connection's writer, in request order,
	// before resp is written. It may block (an fsync, a long poll) and
	// fills in resp. Meanwhile the connection goes on reading and
	// handling the requests behind this one.
	wait func(ctx context.Context)
	// closeAfter, if set, closes the connection once resp is written: no
	// request after this one is read (a failed SASL authentication).
	closeAfter error
}
