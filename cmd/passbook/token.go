package main

import (
	"errors"
	"fmt"
	"slices"
	"text/tabwriter"
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
			list, err := users.List()
			if err != nil {
				return err
			}
			if !slices.ContainsFunc(list, func(u auth.UserInfo) bool { return u.Name == user }) {
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
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the tokens (never their secrets)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			toks, err := auth.OpenTokens(e.data)
			if err != nil {
				return err
			}
			list, err := toks.List()
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(e, list)
			}
			if len(list) == 0 {
				fmt.Fprintln(e.stderr, "no tokens (create one with: passbook token create NAME --user USER)")
				return nil
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "TOKEN\tUSER\tCREATED")
			for _, t := range list {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", t.Name, t.User, t.Created.Local().Format(time.DateTime))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
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
