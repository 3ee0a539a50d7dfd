package kafka

// DescribeGroups (key 15): versions 0–5.
//
// A group's state, protocol and members, with each member's metadata and
// assignment once the group is stable (as Kafka answers). A consumer name
// that has only committed offsets is an Empty group; any other name is
// Dead, with no error (Kafka's answer before v6).
//
// ACLs: Describe on each group (GROUP_AUTHORIZATION_FAILED for it). Its
// authorized operations (v3+) are filled in when asked for.

import (
	"context"

	"github.com/passbook-log/passbook/acl"
	"github.com/passbook-log/passbook/offsets"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.DescribeGroups, 0, 5, describeGroups) }

func describeGroups(ctx context.Context, c *conn, req *kmsg.DescribeGroupsRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	for _, name := range req.Groups {
		if !c.allowed(acl.Describe, acl.Group, name) {
			g := kmsg.NewDescribeGroupsResponseGroup()
			g.Group, g.ErrorCode = name, kerr.GroupAuthorizationFailed.Code
			resp.Groups = append(resp.Groups, g)
			continue
		}
		s, code := c.s.groups.describe(context.WithoutCancel(ctx), name)
		g := kmsg.NewDescribeGroupsResponseGroup()
		if req.IncludeAuthorizedOperations {
			g.AuthorizedOperations = c.authorizedOperations(acl.Group, name)
		}
		g.ErrorCode, g.Group, g.State = code, name, s.state.String()
		g.ProtocolType, g.Protocol, g.Members = s.protocolType, s.protocol, s.members
		if s.name == "" {
			g.State = "Dead"
		}
		resp.Groups = append(resp.Groups, g)
	}
	return reply{resp: resp}, nil
}

// describe summarizes one group; the summary's name is empty for a group
// that does not exist.
func (co *coordinator) describe(ctx context.Context, name string) (groupSummary, int16) {
	if name == "" {
		return groupSummary{}, kerr.InvalidGroupID.Code
	}
	co.mu.Lock()
	g := co.groupLocked(name, false)
	var s groupSummary
	if g != nil {
		s = g.summaryLocked()
	}
	co.mu.Unlock()
	if g != nil {
		return s, 0
	}
	list, err := co.store.List(ctx, offsets.Filter{Consumer: name})
	if err != nil {
		return groupSummary{}, co.storeErrorCode(err)
	}
	if len(list) > 0 {
		return groupSummary{name: name, state: stateEmpty}, 0
	}
	return groupSummary{}, 0
}
