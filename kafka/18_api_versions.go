package kafka

// ApiVersions (key 18): versions 0–3.
//
// The answer is built from the handler registry. A request at a version
// this server does not know gets, as Kafka does, a v0 response with
// UNSUPPORTED_VERSION and the supported ranges (see conn.handle), and its
// body is not parsed. ApiVersions responses always use response header v0.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.ApiVersions, 0, 3, apiVersions) }

func apiVersions(_ context.Context, _ *conn, req *kmsg.ApiVersionsRequest) (reply, error) {
	return reply{resp: apiVersionsResponse(req.Version)}, nil
}

// apiVersionsResponse lists every registered API key and its versions.
func apiVersionsResponse(version int16) *kmsg.ApiVersionsResponse {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = version
	for _, h := range handlers {
		if h == nil {
			continue
		}
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = int16(h.key), h.min, h.max
		resp.ApiKeys = append(resp.ApiKeys, k)
	}
	return resp
}
