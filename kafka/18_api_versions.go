package kafka

// ApiVersions (key 18): versions 0–5.
//
// The answer is built from the handler registry. v3+ names the client
// software; v4 only lets a supported feature's min version be 0 (this
// server lists no features). v5 (KIP-1242) may name the cluster and the
// node the client means to reach, both or neither (INVALID_REQUEST): a
// client that reached another cluster or node — an address reused by a
// new server — is told REBOOTSTRAP_REQUIRED, and no versions. A request at a version
// this server does not know gets, as Kafka does, a v0 response with
// UNSUPPORTED_VERSION and the supported ranges (see conn.handle), and its
// body is not parsed. ApiVersions responses always use response header v0.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.ApiVersions, 0, 5, apiVersions) }

func apiVersions(_ context.Context, c *conn, req *kmsg.ApiVersionsRequest) (reply, error) {
	if req.Version >= 5 && (req.ClusterID != nil || req.NodeID != -1) {
		resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
		switch {
		case req.ClusterID == nil || req.NodeID == -1:
			resp.ErrorCode = kerr.InvalidRequest.Code
			return reply{resp: resp}, nil
		case *req.ClusterID != c.s.o.ClusterID || req.NodeID != NodeID:
			resp.ErrorCode = kerr.RebootstrapRequired.Code
			return reply{resp: resp}, nil
		}
	}
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
