package kafka

// DescribeGroups (key 15): versions 0–5.
//
// A group's state, protocol and members, with each member's metadata and
// assignment once the group is stable (as Kafka answers). A consumer name
// that has only committed offsets is an Empty group; any other name is
// Dead, with no error (Kafka's answer before v6), and so is a group of
// the KIP-848 protocol, which is not a classic group (Kafka 4 answers
// the same; ConsumerGroupDescribe describes it). From v6, both get
// GROUP_ID_NOT_FOUND with Kafka's message.
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
		if s.name == "" || s.consumerState != "" {
			g.State, g.ProtocolType, g.Protocol, g.Members = "Dead", "", "", nil
			if req.Version >= 6 && code == 0 {
				g.ErrorCode = kerr.GroupIDNotFound.Code
				g.ErrorMessage = kmsg.StringPtr("Group " + name + " not found.")
				if s.consumerState != "" {
					g.ErrorMessage = kmsg.StringPtr("Group " + name + " is not a classic group.")
				}
			}
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
	} else if cg := co.mu.cgroups[name]; cg != nil {
		co.mu.Unlock()
		return groupSummary{name: name, protocolType: "consumer", consumerState: cg.stateLocked()}, 0
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
