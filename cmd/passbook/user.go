package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/passbook-log/passbook/auth"
	"github.com/passbook-log/passbook/internal/thousands"
	"github.com/spf13/cobra"
)

func newUserCmd(e *env) *cobra.Command {
	cmd := group(&cobra.Command{
		Use:   "user",
		Short: "Add, list and delete the users that clients authenticate as",
		Long: `Manage the users of the data directory: the names and passwords that Kafka
clients authenticate with (SASL PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 with
'passbook serve --sasl') and that the HTTP API and dashboard accept. Only
salted SCRAM credentials are stored (DIR/security/users.json), never a
password. A running 'passbook serve' sees a change within a second.`,
	})
	cmd.AddCommand(newUserAddCmd(e), newUserListCmd(e), newUserDeleteCmd(e))
	return cmd
}

func newUserAddCmd(e *env) *cobra.Command {
	var (
		mechanisms    []string
		iterations    int
		passwordStdin bool
	)
	cmd := &cobra.Command{
		Use:   "add NAME --password-stdin",
		Short: "Add a user, or change a user's password",
		Long: `Add a user, or change an existing user's password. The password is read from
the first line of standard input (--password-stdin): never give it as an
argument, where other users of the machine would see it in ps.

By default the user gets both a SCRAM-SHA-256 and a SCRAM-SHA-512
credential (PLAIN and the HTTP API check either); --mechanism stores one.
--iterations is the SCRAM iteration count, 4,096 to 16,384 as Kafka allows.`,
		Example: `  echo "$PASSWORD" | passbook user add alice --password-stdin
  passbook user add ci --mechanism scram-sha-512 --password-stdin < secret.txt`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if err := auth.ValidateName(name); err != nil {
				return usageError{err}
			}
			mechs, err := scramMechanisms(mechanisms)
			if err != nil {
				return err
			}
			if iterations < auth.MinIterations || iterations > auth.MaxIterations {
				return usagef("--iterations %s: want %s to %s", thousands.Int(iterations), thousands.Int(auth.MinIterations), thousands.Int(auth.MaxIterations))
			}
			if !passwordStdin {
				return usagef("give the password on standard input with --password-stdin (never as an argument: it would show in ps)")
			}
			password, err := readPassword(e.stdin)
			if err != nil {
				return err
			}
			users, err := auth.OpenUsers(e.data)
			if err != nil {
				return err
			}
			existed, err := users.Exists(name)
			if err != nil {
				return err
			}
			for _, m := range mechs {
				if err := users.Set(name, m, password, iterations); err != nil {
					if errors.Is(err, auth.ErrInvalid) {
						return usageError{err}
					}
					return err
				}
			}
			verb := "added"
			if existed {
				verb = "password changed"
			}
			fmt.Fprintf(e.stdout, "user %s %s: %s (%s iterations)\n", name, verb, strings.Join(mechs, " and "), thousands.Int(iterations))
			return nil
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&mechanisms, "mechanism", nil, "scram-sha-256 or scram-sha-512 (default: both)")
	f.IntVar(&iterations, "iterations", auth.DefaultIterations, "SCRAM iteration count")
	f.BoolVar(&passwordStdin, "password-stdin", false, "read the password from the first line of standard input")
	return cmd
}

// scramMechanisms parses --mechanism values (default: both SCRAM ones).
func scramMechanisms(flags []string) ([]string, error) {
	if len(flags) == 0 {
		return auth.SCRAMMechanisms, nil
	}
	var out []string
	for _, f := range flags {
		m, err := auth.ParseMechanism(f)
		if err != nil || m == auth.PLAIN {
			return nil, usagef("--mechanism %q: want scram-sha-256 or scram-sha-512 (PLAIN is checked against these)", f)
		}
		out = append(out, m)
	}
	return out, nil
}

// readPassword reads the first line of r, without its line ending.
func readPassword(r io.Reader) ([]byte, error) {
	line, err := bufio.NewReaderSize(r, 4096).ReadBytes('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("read the password: %w", err)
	}
	line = bytes.TrimRight(line, "\r\n")
	switch {
	case len(line) == 0:
		return nil, usagef("--password-stdin: standard input has no password (an empty first line)")
	case len(line) > auth.MaxPasswordBytes:
		return nil, usagef("--password-stdin: a password of more than %s bytes", thousands.Int(auth.MaxPasswordBytes))
	}
	return line, nil
}

func newUserListCmd(e *env) *cobra.Command {
	return newListCmd(e, "List the users and their SCRAM mechanisms",
		"no users (add one with: passbook user add NAME --password-stdin)",
		func() ([]auth.UserInfo, error) {
			users, err := auth.OpenUsers(e.data)
			if err != nil {
				return nil, err
			}
			return users.List()
		},
		"USER\tCREDENTIALS",
		func(u auth.UserInfo) string {
			var cs []string
			for _, c := range u.Credentials {
				cs = append(cs, fmt.Sprintf("%s (%s iterations)", c.Mechanism, thousands.Int(c.Iterations)))
			}
			return u.Name + "\t" + strings.Join(cs, ", ")
		})
}

// newListCmd is a "list" subcommand of the security files: their rows
// as JSON (--json), or as a table under header; with none, hint on
// stderr.
func newListCmd[T any](e *env, short, hint string, list func() ([]T, error), header string, row func(T) string) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: short,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			rows, err := list()
			if err != nil {
				return err
			}
			if asJSON {
				if rows == nil {
					rows = []T{}
				}
				return writeJSON(e, rows)
			}
			if len(rows) == 0 {
				fmt.Fprintln(e.stderr, hint)
				return nil
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, header)
			for _, r := range rows {
				fmt.Fprintln(tw, row(r))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newUserDeleteCmd(e *env) *cobra.Command {
	var mechanism string
	cmd := &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a user (or one of its mechanisms)",
		Long: `Delete a user's credentials: all of them, or one mechanism's with
--mechanism. Connections the user has open stay open until they
re-authenticate (serve --connections-max-reauth) or close; new ones are
refused within a second.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			m := ""
			if mechanism != "" {
				mechs, err := scramMechanisms([]string{mechanism})
				if err != nil {
					return err
				}
				m = mechs[0]
			}
			users, err := auth.OpenUsers(e.data)
			if err != nil {
				return err
			}
			if err := users.Delete(args[0], m); err != nil {
				return err
			}
			if m == "" {
				fmt.Fprintf(e.stdout, "user %s deleted\n", args[0])
			} else {
				fmt.Fprintf(e.stdout, "user %s: %s credential deleted\n", args[0], m)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&mechanism, "mechanism", "", "delete only this mechanism's credential")
	return cmd
}
