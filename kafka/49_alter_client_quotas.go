package kafka

// AlterClientQuotas (key 49): versions 0–1.
//
// passbook enforces no client quotas, so it stores none: setting one
// (with validate_only too) is refused, entity by entity, with
// POLICY_VIOLATION and a message that says so — a quota accepted but
// not applied would let an operator believe a noisy client is held
// back. Removing quotas succeeds: none is set. An entity Kafka rejects
// (empty, an unknown type, a type named twice) is INVALID_REQUEST; an
// unknown quota key is INVALID_REQUEST too. See docs/kafka.md.
//
// ACLs: AlterConfigs on the cluster (CLUSTER_AUTHORIZATION_FAILED for
// each entity).

import (
	"context"
	"errors"
	"fmt"

	"github.com/passbook-log/passbook/acl"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.AlterClientQuotas, 0, 1, alterClientQuotas) }

// Kafka's quota keys (QuotaConfig).
var quotaKeys = map[string]bool{
	"producer_byte_rate": true, "consumer_byte_rate": true, "request_percentage": true,
	"controller_mutation_rate": true, "connection_creation_rate": true,
}

// errNoQuotas is the answer to setting a client quota.
var errNoQuotas = errors.New("passbook does not enforce client quotas, so it does not store them: a single broker applies no producer_byte_rate, consumer_byte_rate, request_percentage, controller_mutation_rate or connection_creation_rate (what a client may spend is bounded by the serve flags instead: --max-connections, --max-connections-per-ip, --fetch-max-bytes, --socket-request-max-bytes, --queued-max-request-bytes); see docs/kafka.md")

func alterClientQuotas(_ context.Context, c *conn, req *kmsg.AlterClientQuotasRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.AlterClientQuotasResponse)
	allowed := c.allowedCluster(acl.AlterConfigs)
	for _, e := range req.Entries {
		re := kmsg.NewAlterClientQuotasResponseEntry()
		for _, ent := range e.Entity {
			x := kmsg.NewAlterClientQuotasResponseEntryEntity()
			x.Type, x.Name = ent.Type, ent.Name
			re.Entity = append(re.Entity, x)
		}
		var code int16
		var err error
		if !allowed {
			code = kerr.ClusterAuthorizationFailed.Code
		} else if err = quotaEntity(e); err != nil {
			code = kerr.InvalidRequest.Code
		} else {
			for _, op := range e.Ops {
				if !quotaKeys[op.Key] {
					code, err = kerr.InvalidRequest.Code, fmt.Errorf("unknown quota key %q", op.Key)
					break
				}
				if !op.Remove {
					code, err = kerr.PolicyViolation.Code, errNoQuotas
				}
			}
		}
		re.ErrorCode, re.ErrorMessage = code, errorMessage(err)
		resp.Entries = append(resp.Entries, re)
	}
	return reply{resp: resp}, nil
}

// quotaEntity checks an entity as Kafka's ClientQuotaEntity does.
func quotaEntity(e kmsg.AlterClientQuotasRequestEntry) error {
	if len(e.Entity) == 0 {
		return errors.New("the entity is empty")
	}
	seen := map[string]bool{}
	for _, ent := range e.Entity {
		if !quotaEntityTypes[ent.Type] {
			return fmt.Errorf("unknown entity type %q: want user, client-id or ip", ent.Type)
		}
		if seen[ent.Type] {
			return fmt.Errorf("entity type %s is named twice", ent.Type)
		}
		seen[ent.Type] = true
	}
	return nil
}
