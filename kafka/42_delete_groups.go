package kafka

// DeleteGroups (key 42): versions 0–2.
//
// Deletes groups that have no members (classic or KIP-848), and with
// them their committed offsets in the offset store (whoever committed
// them: this deletes an embedded consumer's bookmarks too, as `passbook
// offsets delete` does).
// A group with members gets NON_EMPTY_GROUP; a name with neither members
// nor offsets GROUP_ID_NOT_FOUND.
//
// ACLs: Delete on each group (GROUP_AUTHORIZATION_FAILED for it).

import (
	"context"

	"github.com/passbook-log/passbook/acl"
	"github.com/passbook-log/passbook/offsets"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.DeleteGroups, 0, 2, deleteGroups) }

func deleteGroups(ctx context.Context, c *conn, req *kmsg.DeleteGroupsRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	for _, name := range req.Groups {
		g := kmsg.NewDeleteGroupsResponseGroup()
		g.Group, g.ErrorCode = name, kerr.GroupAuthorizationFailed.Code
		if c.allowed(acl.Delete, acl.Group, name) {
			g.ErrorCode = c.s.groups.deleteGroup(context.WithoutCancel(ctx), name)
		}
		resp.Groups = append(resp.Groups, g)
	}
	return reply{resp: resp}, nil
}

// deleteGroup deletes a group with no members and its offsets, and
// returns the error code.
func (co *coordinator) deleteGroup(ctx context.Context, name string) int16 {
	if name == "" {
		return kerr.InvalidGroupID.Code
	}
	co.mu.Lock()
	defer co.mu.Unlock()
	g := co.groupLocked(name, false)
	if g != nil && len(g.members) > 0 {
		return kerr.NonEmptyGroup.Code
	}
	cg := co.mu.cgroups[name]
	if cg != nil && len(cg.members) > 0 {
		return kerr.NonEmptyGroup.Code
	}
	n, err := co.store.Delete(ctx, offsets.Filter{Consumer: name})
	if err != nil {
		return co.storeErrorCode(err)
	}
	if g == nil && cg == nil && n == 0 {
		return kerr.GroupIDNotFound.Code
	}
	delete(co.mu.cgroups, name)
	if g != nil {
		g.stopTimersLocked()
		for _, m := range g.pending {
			m.stopTimer()
		}
		delete(co.mu.groups, name)
	}
	co.log.Info("kafka: deleted group", "group", name, "offsets", n)
	return 0
}
