package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/passbook-log/passbook/auth"
	"github.com/spf13/cobra"
)

func newTokenCmd(e *env) *cobra.Command {
	cmd := group(&cobra.Command{
		Use:   "token",
		Short: "Create, list and revoke bearer tokens for the HTTP API",
		Long: `Manage bearer tokens for the HTTP API: a token stands for a user (its ACLs
apply) until it is revoked or the user deleted, and is sent as
'Authorization: Bearer TOKEN'.
Only a SHA-256 of each token is stored (DIR/security/tokens.json). A running
'passbook serve' sees a change within a second.`,
	})
	cmd.AddCommand(newTokenCreateCmd(e), newTokenListCmd(e), newTokenRevokeCmd(e))
	return cmd
}

func newTokenCreateCmd(e *env) *cobra.Command {
	var user string
	cmd := &cobra.Command{
		Use:   "create NAME --user USER",
		Short: "Create a token for a user and print it (it is shown only once)",
		Example: `  TOKEN=$(passbook token create ci --user alice)
  curl -H "Authorization: Bearer $TOKEN" https://127.0.0.1:8080/api/topics`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if user == "" {
				return usagef("--user is required: the user the token stands for")
			}
			if err := auth.ValidateTokenName(args[0]); err != nil {
				return usageError{err}
			}
			if err := auth.ValidateName(user); err != nil {
				return usageError{err}
			}
			users, err := auth.OpenUsers(e.data)
			if err != nil {
				return err
			}
			exists, err := users.Exists(user)
			if err != nil {
				return err
			}
			if !exists {
				return fmt.Errorf("%w %q: a token stands for a user, and ends with it (add one: passbook user add %s --password-stdin)", auth.ErrUnknownUser, user, user)
			}
			toks, err := auth.OpenTokens(e.data)
			if err != nil {
				return err
			}
			secret, err := toks.Create(args[0], user)
			if errors.Is(err, auth.ErrInvalid) {
				return usageError{err}
			}
			if err != nil {
				return err
			}
			fmt.Fprintln(e.stdout, secret)
			fmt.Fprintf(e.stderr, "token %s created for user %s: keep it secret, it is not shown again (revoke: passbook token revoke %s)\n", args[0], user, args[0])
			return nil
		},
	}
	cmd.Flags().StringVar(&user, "user", "", "the user the token authenticates as")
	return cmd
}

func newTokenListCmd(e *env) *cobra.Command {
	return newListCmd(e, "List the tokens (never their secrets)",
		"no tokens (create one with: passbook token create NAME --user USER)",
		func() ([]auth.TokenInfo, error) {
			toks, err := auth.OpenTokens(e.data)
			if err != nil {
				return nil, err
			}
			return toks.List()
		},
		"TOKEN\tUSER\tCREATED",
		func(t auth.TokenInfo) string {
			return t.Name + "\t" + t.User + "\t" + t.Created.Local().Format(time.DateTime)
		})
}

func newTokenRevokeCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "revoke NAME",
		Short: "Revoke a token: it authenticates no one from then on",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			toks, err := auth.OpenTokens(e.data)
			if err != nil {
				return err
			}
			if err := toks.Revoke(args[0]); err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "token %s revoked\n", args[0])
			return nil
		},
	}
}
