package kafka

// DescribeUserScramCredentials (key 50): version 0.
//
// The SCRAM credentials of Options.Users: for each user its mechanisms
// and iteration counts, never a salt or key. A null or empty user list
// asks for every user, sorted by name. A user asked for with no
// credential gets RESOURCE_NOT_FOUND, one named twice DUPLICATE_RESOURCE
// (once), an empty name RESOURCE_NOT_FOUND — Kafka's answers and
// messages.
//
// ACLs: Describe on the cluster (CLUSTER_AUTHORIZATION_FAILED).

import (
	"context"
	"fmt"
	"slices"

	"github.com/passbook-log/passbook/acl"
	"github.com/passbook-log/passbook/auth"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(kmsg.DescribeUserSCRAMCredentials, 0, 0, describeUserSCRAMCredentials)
}

// scramMechanisms are the mechanisms' numbers in the SCRAM credential
// APIs (Kafka's ScramMechanism.type).
var scramMechanisms = map[int8]string{1: auth.SCRAMSHA256, 2: auth.SCRAMSHA512}

func scramMechanismType(name string) int8 {
	for t, n := range scramMechanisms {
		if n == name {
			return t
		}
	}
	return 0
}

var noUsers = "no user store: kafka.Options.Users is not set"

func describeUserSCRAMCredentials(_ context.Context, c *conn, req *kmsg.DescribeUserSCRAMCredentialsRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
	switch {
	case !c.allowedCluster(acl.Describe):
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return reply{resp: resp}, nil
	case c.s.o.Users == nil:
		resp.ErrorCode, resp.ErrorMessage = kerr.SecurityDisabled.Code, &noUsers
		return reply{resp: resp}, nil
	}
	users, err := c.s.o.Users.List()
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = kerr.UnknownServerError.Code, errorMessage(fmt.Errorf("read the users: %w", err))
		return reply{resp: resp}, nil
	}
	result := func(u auth.UserInfo) kmsg.DescribeUserSCRAMCredentialsResponseResult {
		r := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		r.User = u.Name
		for _, ci := range u.Credentials {
			info := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
			info.Mechanism, info.Iterations = scramMechanismType(ci.Mechanism), int32(ci.Iterations)
			r.CredentialInfos = append(r.CredentialInfos, info)
		}
		return r
	}
	if len(req.Users) == 0 {
		for _, u := range users {
			if len(u.Credentials) > 0 {
				resp.Results = append(resp.Results, result(u))
			}
		}
		return reply{resp: resp}, nil
	}
	count := map[string]int{}
	for _, ru := range req.Users {
		count[ru.Name]++
	}
	done := map[string]bool{}
	for _, ru := range req.Users {
		name := ru.Name
		if done[name] {
			continue
		}
		done[name] = true
		r := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		r.User = name
		i := slices.IndexFunc(users, func(u auth.UserInfo) bool { return u.Name == name })
		switch {
		case name == "":
			r.ErrorCode, r.ErrorMessage = kerr.ResourceNotFound.Code, kmsg.StringPtr("Username must not be empty")
		case count[name] > 1:
			r.ErrorCode = kerr.DuplicateResource.Code
			r.ErrorMessage = kmsg.StringPtr("Cannot describe SCRAM credentials for the same user twice in a single request: " + name)
		case i < 0 || len(users[i].Credentials) == 0:
			r.ErrorCode = kerr.ResourceNotFound.Code
			r.ErrorMessage = kmsg.StringPtr("Attempt to describe a user credential that does not exist: " + name)
		default:
			r = result(users[i])
		}
		resp.Results = append(resp.Results, r)
	}
	return reply{resp: resp}, nil
}
