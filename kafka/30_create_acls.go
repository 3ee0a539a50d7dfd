package kafka

// CreateAcls (key 30): versions 1–3 (Kafka 4's; v0 was removed).
//
// Adds ACLs to the Authorizer's store: they take effect at the next
// request. Each creation is checked as Kafka checks it (acl.Binding.Validate:
// a known resource type, LITERAL or PREFIXED, an operation and a
// permission that are not ANY, a "Type:name" principal, a host, the
// cluster named kafka-cluster …) and one refused gets INVALID_REQUEST
// with the reason, while the others are added. An ACL that exists
// already is no change. Without an Authorizer the answer is
// SECURITY_DISABLED for each.
//
// ACLs: Alter on the cluster (CLUSTER_AUTHORIZATION_FAILED for each).

import (
	"context"
	"fmt"

	"github.com/passbook-log/passbook/acl"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.CreateACLs, 1, 3, createACLs) }

func createACLs(_ context.Context, c *conn, req *kmsg.CreateACLsRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
	resp.Results = make([]kmsg.CreateACLsResponseResult, len(req.Creations))
	if code, msg := c.aclAPIRefusal(acl.Alter); code != 0 {
		for i := range resp.Results {
			resp.Results[i].Default()
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = code, msg
		}
		return reply{resp: resp}, nil
	}
	a := c.s.o.Authorizer
	var valid []acl.Binding
	var at []int
	for i, rc := range req.Creations {
		r := &resp.Results[i]
		r.Default()
		b := acl.Binding{
			ResourceType: acl.ResourceType(rc.ResourceType),
			Name:         rc.ResourceName,
			Pattern:      acl.PatternType(rc.ResourcePatternType),
			Principal:    rc.Principal,
			Host:         rc.Host,
			Operation:    acl.Operation(rc.Operation),
			Permission:   acl.Permission(rc.PermissionType),
		}
		if err := b.Validate(); err != nil {
			r.ErrorCode, r.ErrorMessage = kerr.InvalidRequest.Code, errorMessage(err)
			continue
		}
		valid = append(valid, b)
		at = append(at, i)
	}
	if len(valid) == 0 {
		return reply{resp: resp}, nil
	}
	if err := a.Store().Add(valid...); err != nil {
		msg := errorMessage(fmt.Errorf("add ACLs: %w", err))
		for _, i := range at {
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = kerr.UnknownServerError.Code, msg
		}
		return reply{resp: resp}, nil
	}
	for _, b := range valid {
		c.s.log.Info("kafka: ACL added", "acl", b.String(), "by", c.principal)
	}
	return reply{resp: resp}, nil
}
