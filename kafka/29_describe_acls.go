package kafka

// DescribeAcls (key 29): versions 1–3 (Kafka 4's; v0 was removed).
//
// Lists the ACLs of the Authorizer's store that a filter selects
// (acl.Filter: null or empty strings and the ANY enums match any value;
// pattern type MATCH selects the ACLs that apply to a resource name),
// grouped by resource pattern. A filter with an UNKNOWN value is
// INVALID_REQUEST. Without an Authorizer the answer is SECURITY_DISABLED.
//
// ACLs: Describe on the cluster (CLUSTER_AUTHORIZATION_FAILED).

import (
	"context"
	"fmt"

	"github.com/passbook-log/passbook/acl"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.DescribeACLs, 1, 3, describeACLs) }

// noAuthorizer is the message of SECURITY_DISABLED.
var noAuthorizer = "no authorizer: start passbook serve with --authorize"

// aclAPIRefusal is what the ACL APIs check before anything else: op on
// the cluster, then an authorizer to keep ACLs. It returns the error
// code (and message) that answers the whole request, or 0.
func (c *conn) aclAPIRefusal(op acl.Operation) (int16, *string) {
	switch {
	case !c.allowedCluster(op):
		return kerr.ClusterAuthorizationFailed.Code, nil
	case c.s.o.Authorizer == nil:
		return kerr.SecurityDisabled.Code, &noAuthorizer
	}
	return 0, nil
}

func describeACLs(_ context.Context, c *conn, req *kmsg.DescribeACLsRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.DescribeACLsResponse)
	if code, msg := c.aclAPIRefusal(acl.Describe); code != 0 {
		resp.ErrorCode, resp.ErrorMessage = code, msg
		return reply{resp: resp}, nil
	}
	a := c.s.o.Authorizer
	f := aclFilter(req.ResourceType, req.ResourceName, req.ResourcePatternType, req.Principal, req.Host, req.Operation, req.PermissionType)
	if err := f.Validate(); err != nil {
		resp.ErrorCode, resp.ErrorMessage = kerr.InvalidRequest.Code, errorMessage(err)
		return reply{resp: resp}, nil
	}
	bindings, err := a.Store().List(f)
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = kerr.UnknownServerError.Code, errorMessage(fmt.Errorf("read the ACLs: %w", err))
		return reply{resp: resp}, nil
	}
	type pattern struct {
		rt   acl.ResourceType
		name string
		pt   acl.PatternType
	}
	at := map[pattern]int{}
	for _, b := range bindings {
		k := pattern{b.ResourceType, b.Name, b.Pattern}
		i, ok := at[k]
		if !ok {
			r := kmsg.NewDescribeACLsResponseResource()
			r.ResourceType, r.ResourceName, r.ResourcePatternType = kmsg.ACLResourceType(b.ResourceType), b.Name, kmsg.ACLResourcePatternType(b.Pattern)
			resp.Resources = append(resp.Resources, r)
			i = len(resp.Resources) - 1
			at[k] = i
		}
		ra := kmsg.NewDescribeACLsResponseResourceACL()
		ra.Principal, ra.Host, ra.Operation, ra.PermissionType = b.Principal, b.Host, kmsg.ACLOperation(b.Operation), kmsg.ACLPermissionType(b.Permission)
		resp.Resources[i].ACLs = append(resp.Resources[i].ACLs, ra)
	}
	return reply{resp: resp}, nil
}

// aclFilter is a DescribeAcls or DeleteAcls filter as an acl.Filter: a
// null string matches any value.
func aclFilter(rt kmsg.ACLResourceType, name *string, pt kmsg.ACLResourcePatternType, principal, host *string, op kmsg.ACLOperation, perm kmsg.ACLPermissionType) acl.Filter {
	deref := func(s *string) string {
		if s == nil {
			return ""
		}
		return *s
	}
	return acl.Filter{
		ResourceType: acl.ResourceType(rt),
		Name:         deref(name),
		Pattern:      acl.PatternType(pt),
		Principal:    deref(principal),
		Host:         deref(host),
		Operation:    acl.Operation(op),
		Permission:   acl.Permission(perm),
	}
}
