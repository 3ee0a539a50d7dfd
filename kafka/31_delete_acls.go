package kafka

// DeleteAcls (key 31): versions 1–3 (Kafka 4's; v0 was removed).
//
// Deletes the ACLs each filter selects (as DescribeAcls selects them)
// and answers, for each filter, the ACLs it deleted. A filter with an
// UNKNOWN value gets INVALID_REQUEST; the others are applied. Without
// an Authorizer the answer is SECURITY_DISABLED for each.
//
// ACLs: Alter on the cluster (CLUSTER_AUTHORIZATION_FAILED for each).

import (
	"context"
	"fmt"

	"github.com/passbook-log/passbook/acl"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.DeleteACLs, 1, 3, deleteACLs) }

func deleteACLs(_ context.Context, c *conn, req *kmsg.DeleteACLsRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
	resp.Results = make([]kmsg.DeleteACLsResponseResult, len(req.Filters))
	if code, msg := c.aclAPIRefusal(acl.Alter); code != 0 {
		for i := range resp.Results {
			resp.Results[i].Default()
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = code, msg
		}
		return reply{resp: resp}, nil
	}
	a := c.s.o.Authorizer
	var valid []acl.Filter
	var at []int
	for i, rf := range req.Filters {
		r := &resp.Results[i]
		r.Default()
		f := aclFilter(rf.ResourceType, rf.ResourceName, rf.ResourcePatternType, rf.Principal, rf.Host, rf.Operation, rf.PermissionType)
		if err := f.Validate(); err != nil {
			r.ErrorCode, r.ErrorMessage = kerr.InvalidRequest.Code, errorMessage(err)
			continue
		}
		valid = append(valid, f)
		at = append(at, i)
	}
	if len(valid) == 0 {
		return reply{resp: resp}, nil
	}
	deleted, err := a.Store().Delete(valid...)
	if err != nil {
		msg := errorMessage(fmt.Errorf("delete ACLs: %w", err))
		for _, i := range at {
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = kerr.UnknownServerError.Code, msg
		}
		return reply{resp: resp}, nil
	}
	for k, i := range at {
		for _, b := range deleted[k] {
			m := kmsg.NewDeleteACLsResponseResultMatchingACL()
			m.ResourceType, m.ResourceName, m.ResourcePatternType = kmsg.ACLResourceType(b.ResourceType), b.Name, kmsg.ACLResourcePatternType(b.Pattern)
			m.Principal, m.Host = b.Principal, b.Host
			m.Operation, m.PermissionType = kmsg.ACLOperation(b.Operation), kmsg.ACLPermissionType(b.Permission)
			resp.Results[i].MatchingACLs = append(resp.Results[i].MatchingACLs, m)
			c.s.log.Info("kafka: ACL deleted", "acl", b.String(), "by", c.principal)
		}
	}
	return reply{resp: resp}, nil
}
