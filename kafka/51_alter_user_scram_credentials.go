package kafka

// AlterUserScramCredentials (key 51): version 0.
//
// Adds, replaces and deletes SCRAM credentials of Options.Users. An
// upsertion carries what the client derived from the password (salt,
// salted password, iterations): the password never reaches the server,
// and only the stored and server keys are kept. The answer has one
// result per user, checked as Kafka checks them: an empty name
// UNACCEPTABLE_CREDENTIAL, a mechanism other than SCRAM-SHA-256 (1) or
// SCRAM-SHA-512 (2) UNSUPPORTED_SASL_MECHANISM, iterations outside
// [4,096, 16,384] UNACCEPTABLE_CREDENTIAL, the same user and mechanism
// twice in the request (an upsertion and a deletion, say)
// DUPLICATE_RESOURCE, the deletion of a credential that does not exist
// RESOURCE_NOT_FOUND. A user with any of these is not changed at all;
// the others are. Sessions already authenticated stay so (as in Kafka);
// the next authentication uses the new credential.
//
// ACLs: Alter on the cluster (CLUSTER_AUTHORIZATION_FAILED for each user).

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/passbook-log/passbook/acl"
	"github.com/passbook-log/passbook/auth"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(kmsg.AlterUserSCRAMCredentials, 0, 0, alterUserSCRAMCredentials)
}

func alterUserSCRAMCredentials(_ context.Context, c *conn, req *kmsg.AlterUserSCRAMCredentialsRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	// The users, in the order they first appear.
	var names []string
	for _, d := range req.Deletions {
		if !slices.Contains(names, d.Name) {
			names = append(names, d.Name)
		}
	}
	for _, u := range req.Upsertions {
		if !slices.Contains(names, u.Name) {
			names = append(names, u.Name)
		}
	}
	failed := map[string]kmsg.AlterUserSCRAMCredentialsResponseResult{}
	fail := func(name string, e *kerr.Error, msg string) {
		if _, ok := failed[name]; ok {
			return // the first reason found
		}
		r := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		r.User, r.ErrorCode = name, e.Code
		if msg != "" {
			r.ErrorMessage = &msg
		}
		failed[name] = r
	}
	answer := func() (reply, error) {
		for _, name := range names {
			r, ok := failed[name]
			if !ok {
				r = kmsg.NewAlterUserSCRAMCredentialsResponseResult()
				r.User = name
			}
			resp.Results = append(resp.Results, r)
		}
		return reply{resp: resp}, nil
	}
	users := c.s.o.Users
	switch {
	case !c.allowedCluster(acl.Alter):
		for _, name := range names {
			fail(name, kerr.ClusterAuthorizationFailed, "")
		}
		return answer()
	case users == nil:
		for _, name := range names {
			fail(name, kerr.SecurityDisabled, noUsers)
		}
		return answer()
	}

	// What Kafka refuses before looking at the store.
	type pair struct {
		name string
		mech int8
	}
	seen := map[pair]int{}
	for _, d := range req.Deletions {
		switch {
		case d.Name == "":
			fail(d.Name, kerr.UnacceptableCredential, "Username must not be empty")
		case scramMechanisms[d.Mechanism] == "":
			fail(d.Name, kerr.UnsupportedSaslMechanism, "Unknown SCRAM mechanism")
		}
		seen[pair{d.Name, d.Mechanism}]++
	}
	for _, u := range req.Upsertions {
		switch {
		case u.Name == "":
			fail(u.Name, kerr.UnacceptableCredential, "Username must not be empty")
		case scramMechanisms[u.Mechanism] == "":
			fail(u.Name, kerr.UnsupportedSaslMechanism, "Unknown SCRAM mechanism")
		case u.Iterations < auth.MinIterations:
			fail(u.Name, kerr.UnacceptableCredential, "Too few iterations")
		case u.Iterations > auth.MaxIterations:
			fail(u.Name, kerr.UnacceptableCredential, "Too many iterations")
		case len(u.Salt) == 0 || len(u.SaltedPassword) == 0:
			fail(u.Name, kerr.UnacceptableCredential, "Salt and salted password must not be empty")
		}
		if err := auth.ValidateName(u.Name); err != nil && u.Name != "" {
			fail(u.Name, kerr.UnacceptableCredential, err.Error())
		}
		seen[pair{u.Name, u.Mechanism}]++
	}
	for p, n := range seen {
		if n > 1 {
			fail(p.name, kerr.DuplicateResource, "A user credential cannot be altered twice in the same request")
		}
	}
	list, err := users.List()
	if err != nil {
		for _, name := range names {
			fail(name, kerr.UnknownServerError, fmt.Sprintf("read the users: %v", err))
		}
		return answer()
	}
	has := func(name, mech string) bool {
		i := slices.IndexFunc(list, func(u auth.UserInfo) bool { return u.Name == name })
		return i >= 0 && slices.ContainsFunc(list[i].Credentials, func(ci auth.CredentialInfo) bool { return ci.Mechanism == mech })
	}
	for _, d := range req.Deletions {
		if _, bad := failed[d.Name]; !bad && !has(d.Name, scramMechanisms[d.Mechanism]) {
			fail(d.Name, kerr.ResourceNotFound, "Attempt to delete a user credential that does not exist")
		}
	}

	// Apply: each user's deletions, then its upsertions.
	for _, name := range names {
		if _, bad := failed[name]; bad {
			continue
		}
		for _, d := range req.Deletions {
			if d.Name != name {
				continue
			}
			if err := users.Delete(name, scramMechanisms[d.Mechanism]); err != nil {
				if errors.Is(err, auth.ErrUnknownUser) {
					fail(name, kerr.ResourceNotFound, "Attempt to delete a user credential that does not exist")
				} else {
					fail(name, kerr.UnknownServerError, err.Error())
				}
				break
			}
			c.s.log.Info("kafka: SCRAM credential deleted", "user", name, "mechanism", scramMechanisms[d.Mechanism], "by", c.principal)
		}
		if _, bad := failed[name]; bad {
			continue
		}
		for _, u := range req.Upsertions {
			if u.Name != name {
				continue
			}
			if err := users.SetSalted(name, scramMechanisms[u.Mechanism], u.Salt, u.SaltedPassword, int(u.Iterations)); err != nil {
				code := kerr.UnknownServerError
				if errors.Is(err, auth.ErrInvalid) {
					code = kerr.UnacceptableCredential
				}
				fail(name, code, err.Error())
				break
			}
			c.s.log.Info("kafka: SCRAM credential set", "user", name, "mechanism", scramMechanisms[u.Mechanism], "iterations", u.Iterations, "by", c.principal)
		}
	}
	return answer()
}
