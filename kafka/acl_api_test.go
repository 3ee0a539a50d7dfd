package kafka

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/passbook-log/passbook/acl"
	"github.com/passbook-log/passbook/auth"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// CreateAcls, DescribeAcls and DeleteAcls through kadm, by a super user:
// what is created is enforced at once, described as created, and gone
// once deleted.
func TestACLAPIs_Kadm(t *testing.T) {
	w := newACLWorld(t)
	ctx := testCtx(t)
	adm := kadm.NewClient(w.admin)

	created, err := adm.CreateACLs(ctx, kadm.NewACLs().Topics("orders").ResourcePatternType(kadm.ACLPatternLiteral).
		Allow("User:alice").AllowHosts("*").Operations(kadm.OpWrite))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range created {
		if c.Err != nil {
			t.Fatalf("create %s: %v", c.Name, c.Err)
		}
	}
	produce := func() int16 {
		return seedRequest[*kmsg.ProduceResponse](t, w.alice, produceRequest(9, -1, "orders", 0, testBatch(t, 1, 10))).Topics[0].Partitions[0].ErrorCode
	}
	if code := produce(); code != 0 {
		t.Fatalf("produce after CreateAcls: error %d", code)
	}

	described, err := adm.DescribeACLs(ctx, kadm.NewACLs().AnyResource().ResourcePatternType(kadm.ACLPatternAny).Allow().AllowHosts().Operations(kadm.OpAny))
	if err != nil {
		t.Fatal(err)
	}
	if len(described) != 1 || described[0].Err != nil || len(described[0].Described) != 1 {
		t.Fatalf("described %+v", described)
	}
	d := described[0].Described[0]
	if d.Principal != "User:alice" || d.Host != "*" || d.Name != "orders" || d.Type != kmsg.ACLResourceTypeTopic ||
		d.Pattern != kadm.ACLPatternLiteral || d.Operation != kadm.OpWrite || d.Permission != kmsg.ACLPermissionTypeAllow {
		t.Fatalf("described %+v", d)
	}

	deleted, err := adm.DeleteACLs(ctx, kadm.NewACLs().Topics("orders").ResourcePatternType(kadm.ACLPatternLiteral).Allow("User:alice").AllowHosts().Operations(kadm.OpAny))
	if err != nil {
		t.Fatal(err)
	}
	if len(deleted) != 1 || deleted[0].Err != nil || len(deleted[0].Deleted) != 1 || deleted[0].Deleted[0].Principal != "User:alice" {
		t.Fatalf("deleted %+v", deleted)
	}
	if code := produce(); code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("produce after DeleteAcls: error %d", code)
	}
	if left, _ := w.store.List(acl.Filter{ResourceType: acl.ResourceAny, Pattern: acl.PatternAny, Operation: acl.OpAny, Permission: acl.PermissionAny}); len(left) != 0 {
		t.Fatalf("left in the store: %v", left)
	}
}

// What CreateAcls refuses, each with INVALID_REQUEST, while the valid
// creation in the same request is made.
func TestCreateACLs_Invalid(t *testing.T) {
	w := newACLWorld(t)
	valid := kmsg.NewCreateACLsRequestCreation()
	valid.ResourceType, valid.ResourceName, valid.ResourcePatternType = kmsg.ACLResourceTypeTopic, "orders", kmsg.ACLResourcePatternTypeLiteral
	valid.Principal, valid.Host, valid.Operation, valid.PermissionType = "User:alice", "*", kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow
	for _, tc := range []struct {
		name string
		edit func(*kmsg.CreateACLsRequestCreation)
	}{
		{"pattern type MATCH", func(c *kmsg.CreateACLsRequestCreation) { c.ResourcePatternType = kmsg.ACLResourcePatternTypeMatch }},
		{"pattern type ANY", func(c *kmsg.CreateACLsRequestCreation) { c.ResourcePatternType = kmsg.ACLResourcePatternTypeAny }},
		{"resource type ANY", func(c *kmsg.CreateACLsRequestCreation) { c.ResourceType = kmsg.ACLResourceTypeAny }},
		{"operation ANY", func(c *kmsg.CreateACLsRequestCreation) { c.Operation = kmsg.ACLOperationAny }},
		{"permission ANY", func(c *kmsg.CreateACLsRequestCreation) { c.PermissionType = kmsg.ACLPermissionTypeAny }},
		{"empty name", func(c *kmsg.CreateACLsRequestCreation) { c.ResourceName = "" }},
		{"principal without a type", func(c *kmsg.CreateACLsRequestCreation) { c.Principal = "alice" }},
		{"cluster not named kafka-cluster", func(c *kmsg.CreateACLsRequestCreation) {
			c.ResourceType, c.ResourceName, c.Operation = kmsg.ACLResourceTypeCluster, "mine", kmsg.ACLOperationDescribe
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w.grant(t)
			bad := valid
			tc.edit(&bad)
			req := kmsg.NewPtrCreateACLsRequest()
			req.Creations = []kmsg.CreateACLsRequestCreation{bad, valid}
			resp := seedRequest[*kmsg.CreateACLsResponse](t, w.admin, req)
			if r := resp.Results[0]; r.ErrorCode != kerr.InvalidRequest.Code || r.ErrorMessage == nil {
				t.Fatalf("bad creation: error %d %v, want INVALID_REQUEST with a reason", r.ErrorCode, r.ErrorMessage)
			}
			if r := resp.Results[1]; r.ErrorCode != 0 {
				t.Fatalf("valid creation: error %d", r.ErrorCode)
			}
			if got, _ := w.store.List(acl.Filter{ResourceType: acl.ResourceAny, Pattern: acl.PatternAny, Operation: acl.OpAny, Permission: acl.PermissionAny}); len(got) != 1 {
				t.Fatalf("stored %v, want the valid one alone", got)
			}
		})
	}
	t.Run("DescribeAcls filter with UNKNOWN", func(t *testing.T) {
		req := kmsg.NewPtrDescribeACLsRequest()
		req.ResourceType, req.ResourcePatternType, req.Operation, req.PermissionType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny, kmsg.ACLOperationUnknown, kmsg.ACLPermissionTypeAny
		if resp := seedRequest[*kmsg.DescribeACLsResponse](t, w.admin, req); resp.ErrorCode != kerr.InvalidRequest.Code {
			t.Fatalf("error %d, want INVALID_REQUEST", resp.ErrorCode)
		}
	})
}

func TestACLAPIs_WithoutAuthorizer_SecurityDisabled(t *testing.T) {
	ts := startServer(t, nil)
	adm := kadm.NewClient(ts.client(t, kgo.RequestRetries(0)))
	ctx := testCtx(t)
	described, err := adm.DescribeACLs(ctx, kadm.NewACLs().AnyResource().ResourcePatternType(kadm.ACLPatternAny).Allow().AllowHosts().Operations(kadm.OpAny))
	if err != nil || len(described) != 1 || !errors.Is(described[0].Err, kerr.SecurityDisabled) {
		t.Fatalf("DescribeACLs: %+v, %v; want SECURITY_DISABLED", described, err)
	}
	created, err := adm.CreateACLs(ctx, kadm.NewACLs().Topics("t").Allow("User:a").AllowHosts("*").Operations(kadm.OpRead))
	if err != nil || len(created) != 1 || !errors.Is(created[0].Err, kerr.SecurityDisabled) || created[0].ErrMessage != noAuthorizer {
		t.Fatalf("CreateACLs: %+v, %v", created, err)
	}
}

// AlterUserScramCredentials and DescribeUserScramCredentials through
// kadm: a user made over Kafka authenticates at once; one deleted no
// longer does.
func TestSCRAMAPIs_Kadm(t *testing.T) {
	w := newACLWorld(t)
	ctx := testCtx(t)
	adm := kadm.NewClient(w.admin)

	altered, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "carol", Mechanism: kadm.ScramSha512, Iterations: 8192, Password: "carol-secret"}})
	if err != nil || altered.Error() != nil {
		t.Fatalf("upsert: %+v, %v", altered, err)
	}
	carol := w.ts.client(t, kgo.SASL(scram.Auth{User: "carol", Pass: "carol-secret"}.AsSha512Mechanism()), kgo.RequestRetries(0))
	if err := carol.Ping(ctx); err != nil {
		t.Fatalf("carol authenticates: %v", err)
	}

	described, err := adm.DescribeUserSCRAMs(ctx, "carol", "alice")
	if err != nil {
		t.Fatal(err)
	}
	if c := described["carol"]; c.Err != nil || len(c.CredInfos) != 1 || c.CredInfos[0].Mechanism != kadm.ScramSha512 || c.CredInfos[0].Iterations != 8192 {
		t.Fatalf("carol described %+v", c)
	}
	if a := described["alice"]; a.Err != nil || len(a.CredInfos) != 2 {
		t.Fatalf("alice described %+v", a)
	}
	all, err := adm.DescribeUserSCRAMs(ctx)
	if err != nil || len(all) != 4 {
		t.Fatalf("all users: %d, %v (want alice, bob, admin, carol)", len(all), err)
	}

	altered, err = adm.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: "carol", Mechanism: kadm.ScramSha512}}, nil)
	if err != nil || altered.Error() != nil {
		t.Fatalf("delete: %+v, %v", altered, err)
	}
	gone := w.ts.client(t, kgo.SASL(scram.Auth{User: "carol", Pass: "carol-secret"}.AsSha512Mechanism()), kgo.RequestRetries(0))
	if err := gone.Ping(ctx); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("carol after deletion: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
	described, err = adm.DescribeUserSCRAMs(ctx, "carol")
	if err != nil {
		t.Fatal(err)
	}
	if c := described["carol"]; !errors.Is(c.Err, kerr.ResourceNotFound) {
		t.Fatalf("carol after deletion described %+v, want RESOURCE_NOT_FOUND", c)
	}
}

// What AlterUserScramCredentials refuses, with Kafka's codes; a refused
// user is not changed, and the others in the request are.
func TestAlterUserSCRAMCredentials_Refused(t *testing.T) {
	w := newACLWorld(t)
	salt := []byte("0123456789abcdef")
	salted := func(mech string, iterations int) []byte {
		b, err := auth.SaltedPassword(mech, []byte("new-secret"), salt, iterations)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	upsert := func(name string, mech int8, iterations int32) kmsg.AlterUserSCRAMCredentialsRequestUpsertion {
		u := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
		u.Name, u.Mechanism, u.Iterations, u.Salt = name, mech, iterations, salt
		u.SaltedPassword = salted(auth.SCRAMSHA256, 4096)
		return u
	}
	deletion := func(name string, mech int8) kmsg.AlterUserSCRAMCredentialsRequestDeletion {
		d := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
		d.Name, d.Mechanism = name, mech
		return d
	}
	for _, tc := range []struct {
		name      string
		deletions []kmsg.AlterUserSCRAMCredentialsRequestDeletion
		upserts   []kmsg.AlterUserSCRAMCredentialsRequestUpsertion
		want      *kerr.Error
	}{
		{"unknown user deleted", []kmsg.AlterUserSCRAMCredentialsRequestDeletion{deletion("nobody", 1)}, nil, kerr.ResourceNotFound},
		{"unknown mechanism", nil, []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{upsert("dave", 3, 4096)}, kerr.UnsupportedSaslMechanism},
		{"too few iterations", nil, []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{upsert("dave", 1, 4095)}, kerr.UnacceptableCredential},
		{"too many iterations", nil, []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{upsert("dave", 1, 16385)}, kerr.UnacceptableCredential},
		{"empty name", nil, []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{upsert("", 1, 4096)}, kerr.UnacceptableCredential},
		{"upserted and deleted", []kmsg.AlterUserSCRAMCredentialsRequestDeletion{deletion("bob", 1)}, []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{upsert("bob", 1, 4096)}, kerr.DuplicateResource},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
			req.Deletions = tc.deletions
			// The same request also gives erin a credential: that goes through.
			req.Upsertions = append(tc.upserts, upsert("erin", 1, 4096))
			resp := seedRequest[*kmsg.AlterUserSCRAMCredentialsResponse](t, w.admin, req)
			codes := map[string]int16{}
			for _, r := range resp.Results {
				codes[r.User] = r.ErrorCode
			}
			user := "dave"
			switch {
			case tc.deletions != nil:
				user = tc.deletions[0].Name
			case tc.upserts[0].Name == "":
				user = ""
			}
			if codes[user] != tc.want.Code || codes["erin"] != 0 || len(resp.Results) != 2 {
				t.Fatalf("results %+v, want %s for %q and success for erin", resp.Results, tc.want.Message, user)
			}
			users, err := w.ts.srv.o.Users.List()
			if err != nil {
				t.Fatal(err)
			}
			for _, u := range users {
				if u.Name == "dave" || u.Name == "" {
					t.Fatalf("refused user %q stored", u.Name)
				}
				if u.Name == "bob" && len(u.Credentials) != 2 {
					t.Fatalf("bob changed: %+v", u.Credentials)
				}
			}
		})
	}
}
