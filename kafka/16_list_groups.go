package kafka

// ListGroups (key 16): versions 0–5.
//
// Lists the groups the coordinator holds in memory and, as Empty groups
// of no protocol type, every other consumer name with committed offsets
// in the offset store: embedded consumers, and Kafka groups from before
// the server last started. Kafka, too, lists a group that only stores
// offsets as Empty. The states filter (v4+) is matched without regard to
// case. A group's type (v5+, and its filter) is "consumer" for a group of
// the KIP-848 protocol, with its states (Empty, Assigning, Reconciling,
// Stable) and protocol type "consumer", else "classic".
//
// ACLs: every group with Describe on the cluster, else the groups the
// client may Describe.

import (
	"context"
	"slices"
	"strings"

	"github.com/passbook-log/passbook/acl"
	"github.com/passbook-log/passbook/offsets"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.ListGroups, 0, 5, listGroups) }

// groupSummary is what ListGroups and DescribeGroups say of a group.
type groupSummary struct {
	name, protocolType, protocol string
	state                        groupState
	members                      []kmsg.DescribeGroupsResponseGroupMember
	// consumerState is set for a KIP-848 group: its state.
	consumerState string
}

// stateName is the group's state as Kafka names it.
func (s groupSummary) stateName() string {
	if s.consumerState != "" {
		return s.consumerState
	}
	return s.state.String()
}

// groupType is "consumer" for a KIP-848 group, else "classic".
func (s groupSummary) groupType() string {
	if s.consumerState != "" {
		return "consumer"
	}
	return "classic"
}

func listGroups(ctx context.Context, c *conn, req *kmsg.ListGroupsRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
	sums, code := c.s.groups.summaries(context.WithoutCancel(ctx))
	resp.ErrorCode = code
	matches := func(filter []string, v string) bool {
		return len(filter) == 0 || slices.ContainsFunc(filter, func(f string) bool { return strings.EqualFold(f, v) })
	}
	all := c.mayCluster(acl.Describe)
	for _, s := range sums {
		if !all && !c.may(acl.Describe, acl.Group, s.name) {
			continue
		}
		if !matches(req.StatesFilter, s.stateName()) || !matches(req.TypesFilter, s.groupType()) {
			continue
		}
		g := kmsg.NewListGroupsResponseGroup()
		g.Group, g.ProtocolType, g.GroupState, g.GroupType = s.name, s.protocolType, s.stateName(), s.groupType()
		resp.Groups = append(resp.Groups, g)
	}
	return reply{resp: resp}, nil
}

// summaries returns every group, from memory and from the offset store,
// sorted by name.
func (co *coordinator) summaries(ctx context.Context) ([]groupSummary, int16) {
	list, err := co.store.List(ctx, offsets.Filter{})
	code := int16(0)
	if err != nil {
		code = co.storeErrorCode(err)
	}
	co.mu.Lock()
	var sums []groupSummary
	for _, g := range co.mu.groups {
		sums = append(sums, g.summaryLocked())
	}
	for _, g := range co.mu.cgroups {
		sums = append(sums, groupSummary{name: g.name, protocolType: "consumer", consumerState: g.stateLocked()})
	}
	co.mu.Unlock()
	for i, e := range list {
		if i > 0 && list[i-1].Consumer == e.Consumer {
			continue
		}
		if !slices.ContainsFunc(sums, func(s groupSummary) bool { return s.name == e.Consumer }) {
			sums = append(sums, groupSummary{name: e.Consumer, state: stateEmpty})
		}
	}
	slices.SortFunc(sums, func(a, b groupSummary) int { return strings.Compare(a.name, b.name) })
	return sums, code
}

// summary describes the group as Kafka does: the protocol, and the
// members' metadata and assignments, only once it is stable.
func (g *group) summaryLocked() groupSummary {
	s := groupSummary{name: g.name, protocolType: g.protocolType, state: g.state}
	stable := g.state == stateStable
	if stable {
		s.protocol = g.protocol
	}
	for _, m := range g.sortedMembersLocked() {
		dm := kmsg.NewDescribeGroupsResponseGroupMember()
		dm.MemberID, dm.InstanceID, dm.ClientID, dm.ClientHost = m.id, m.instanceID, m.clientID, m.clientHost
		if stable {
			dm.ProtocolMetadata, dm.MemberAssignment = m.metadataFor(g.protocol), m.assignment
		}
		s.members = append(s.members, dm)
	}
	return s
}
