package main

import (
	"fmt"
	"net"
	"strings"
	"text/tabwriter"

	"github.com/passbook-log/passbook/acl"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func newACLCmd(e *env) *cobra.Command {
	cmd := group(&cobra.Command{
		Use:   "acl",
		Short: "Add, list and delete ACLs: what each user may do",
		Long: `Manage the access control lists that 'passbook serve --authorize' enforces on
the Kafka protocol and the HTTP API, with Kafka's model: a principal
(User:NAME, or User:* for everyone) from a host (* or an IP) is allowed or
denied an operation on topics, groups (a consumer name is a group), the
cluster, or transactional ids, named literally or by prefix. Deny wins over
allow; with --authorize and no matching ACL, only --super-users may act.
ACLs are kept in DIR/security/acls.json; a running server sees a change within
a second. Over Kafka, kafka-acls.sh and admin clients manage the same ACLs.

The shortcuts give a client role what it needs, as kafka-acls.sh does:
--producer: WRITE, DESCRIBE and CREATE on the topics (an idempotent producer,
every client's default, needs nothing more); --consumer: READ and DESCRIBE on
the topics, READ on the group.`,
	})
	cmd.AddCommand(newACLAddCmd(e), newACLListCmd(e), newACLDeleteCmd(e))
	return cmd
}

// aclFlags select resources and principals, for add, list and delete.
type aclFlags struct {
	allow, deny    []string
	principals     []string // list/delete: either permission
	ops            []string
	topics, groups []string
	txIDs          []string
	cluster        bool
	prefixed       bool
	host           string
	producer       bool
	consumer       bool
	all            bool // delete: everything the other flags select
}

func (a *aclFlags) resources(f *pflag.FlagSet) {
	f.StringSliceVar(&a.topics, "topic", nil, "a topic name (or prefix with --prefixed; * is every topic); repeat for more")
	f.StringSliceVar(&a.groups, "group", nil, "a consumer group or consumer name (or prefix); * is every group")
	f.StringSliceVar(&a.txIDs, "transactional-id", nil, "a transactional id (or prefix)")
	f.BoolVar(&a.cluster, "cluster", false, "the cluster (creating topics, ACLs, users; describing configs)")
	f.BoolVar(&a.prefixed, "prefixed", false, "the names are prefixes: the ACL covers every name that starts with one")
}

type resource struct {
	rt   acl.ResourceType
	name string
}

func (a *aclFlags) resourceList() []resource {
	var out []resource
	for _, t := range a.topics {
		out = append(out, resource{acl.Topic, t})
	}
	for _, g := range a.groups {
		out = append(out, resource{acl.Group, g})
	}
	for _, x := range a.txIDs {
		out = append(out, resource{acl.TransactionalID, x})
	}
	if a.cluster {
		out = append(out, resource{acl.Cluster, acl.ClusterName})
	}
	return out
}

func (a *aclFlags) pattern() acl.PatternType {
	if a.prefixed {
		return acl.Prefixed
	}
	return acl.Literal
}

func parseOps(names []string) ([]acl.Operation, error) {
	var ops []acl.Operation
	for _, n := range names {
		op, err := acl.ParseOperation(n)
		if err != nil || op == acl.OpAny {
			return nil, usagef("--operation %q: want all, read, write, create, delete, alter, describe, cluster-action, describe-configs, alter-configs or idempotent-write", n)
		}
		ops = append(ops, op)
	}
	return ops, nil
}

func checkPrincipals(ps []string) error {
	for _, p := range ps {
		if kind, name, ok := strings.Cut(p, ":"); !ok || kind != "User" || name == "" {
			return usagef("principal %q: want User:NAME, or User:* for every user", p)
		}
	}
	return nil
}

func checkHost(h string) error {
	if h != acl.Wildcard && net.ParseIP(h) == nil {
		return usagef("--host %q: want * or an IP address", h)
	}
	return nil
}

// bindings are what add adds: each principal × resource × operation.
func (a *aclFlags) bindings() ([]acl.Binding, error) {
	if len(a.allow)+len(a.deny) == 0 {
		return nil, usagef("give a principal: --allow User:NAME or --deny User:NAME")
	}
	if err := checkPrincipals(append(append([]string{}, a.allow...), a.deny...)); err != nil {
		return nil, err
	}
	if err := checkHost(a.host); err != nil {
		return nil, err
	}
	ops, err := parseOps(a.ops)
	if err != nil {
		return nil, err
	}
	res := a.resourceList()
	if len(res) == 0 {
		return nil, usagef("give a resource: --topic, --group, --transactional-id or --cluster")
	}
	type rop struct {
		r  resource
		op acl.Operation
	}
	var rops []rop
	if a.producer {
		for _, r := range res {
			if r.rt == acl.Topic {
				rops = append(rops, rop{r, acl.Write}, rop{r, acl.Describe}, rop{r, acl.Create})
			}
		}
		if len(a.topics) == 0 {
			return nil, usagef("--producer needs --topic")
		}
	}
	if a.consumer {
		for _, r := range res {
			switch r.rt {
			case acl.Topic:
				rops = append(rops, rop{r, acl.Read}, rop{r, acl.Describe})
			case acl.Group:
				rops = append(rops, rop{r, acl.Read})
			}
		}
		if len(a.topics) == 0 || len(a.groups) == 0 {
			return nil, usagef("--consumer needs --topic and --group")
		}
	}
	if len(ops) == 0 && !a.producer && !a.consumer {
		return nil, usagef("give --operation (or a shortcut: --producer, --consumer)")
	}
	for _, r := range res {
		for _, op := range ops {
			rops = append(rops, rop{r, op})
		}
	}
	var out []acl.Binding
	for _, perm := range []struct {
		p  acl.Permission
		ps []string
	}{{acl.Allow, a.allow}, {acl.Deny, a.deny}} {
		for _, p := range perm.ps {
			for _, ro := range rops {
				out = append(out, acl.Binding{ResourceType: ro.r.rt, Name: ro.r.name, Pattern: a.pattern(), Principal: p,
					Host: a.host, Operation: ro.op, Permission: perm.p})
			}
		}
	}
	for _, b := range out {
		if err := b.Validate(); err != nil {
			return nil, usageError{err}
		}
	}
	return out, nil
}

func newACLAddCmd(e *env) *cobra.Command {
	var a aclFlags
	cmd := &cobra.Command{
		Use:   "add (--allow|--deny) PRINCIPAL (--operation OP|--producer|--consumer) RESOURCE…",
		Short: "Allow or deny principals operations on resources",
		Example: `  passbook acl add --allow User:alice --producer --topic orders
  passbook acl add --allow User:bob --consumer --topic orders --group billing
  passbook acl add --allow User:etl --operation read --topic logs- --prefixed
  passbook acl add --deny User:mallory --operation all --topic '*'
  passbook acl add --allow User:ops --operation create,alter,describe --cluster`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			bs, err := a.bindings()
			if err != nil {
				return err
			}
			store, err := acl.OpenStore(e.data)
			if err != nil {
				return err
			}
			if err := store.Add(bs...); err != nil {
				return err
			}
			for _, b := range bs {
				fmt.Fprintf(e.stdout, "added: %s\n", describeBinding(b))
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&a.allow, "allow", nil, "principal to allow (User:NAME, User:*); repeat for more")
	f.StringSliceVar(&a.deny, "deny", nil, "principal to deny (deny wins over allow)")
	f.StringSliceVar(&a.ops, "operation", nil, "operation(s): all, read, write, create, delete, alter, describe, cluster-action, describe-configs, alter-configs, idempotent-write")
	f.StringVar(&a.host, "host", acl.Wildcard, "the client address the ACL applies to (* for any)")
	f.BoolVar(&a.producer, "producer", false, "shortcut: WRITE, DESCRIBE and CREATE on the --topic(s)")
	f.BoolVar(&a.consumer, "consumer", false, "shortcut: READ and DESCRIBE on the --topic(s), READ on the --group(s)")
	a.resources(f)
	return cmd
}

// filters are what list and delete select: the flags given, any value
// for the others.
func (a *aclFlags) filters() ([]acl.Filter, error) {
	ps := append(append(append([]string{}, a.principals...), a.allow...), a.deny...)
	if err := checkPrincipals(ps); err != nil {
		return nil, err
	}
	ops, err := parseOps(a.ops)
	if err != nil {
		return nil, err
	}
	if a.host != "" {
		if err := checkHost(a.host); err != nil {
			return nil, err
		}
	}
	base := acl.Filter{ResourceType: acl.ResourceAny, Pattern: acl.PatternAny, Operation: acl.OpAny, Permission: acl.PermissionAny, Host: a.host}
	if a.prefixed {
		base.Pattern = acl.Prefixed
	}
	fs := []acl.Filter{base}
	expand := func(n int, set func(f *acl.Filter, i int)) {
		if n == 0 {
			return
		}
		var out []acl.Filter
		for _, f := range fs {
			for i := range n {
				g := f
				set(&g, i)
				out = append(out, g)
			}
		}
		fs = out
	}
	res := a.resourceList()
	expand(len(res), func(f *acl.Filter, i int) { f.ResourceType, f.Name = res[i].rt, res[i].name })
	type pp struct {
		p    string
		perm acl.Permission
	}
	var principals []pp
	for _, p := range a.principals {
		principals = append(principals, pp{p, acl.PermissionAny})
	}
	for _, p := range a.allow {
		principals = append(principals, pp{p, acl.Allow})
	}
	for _, p := range a.deny {
		principals = append(principals, pp{p, acl.Deny})
	}
	expand(len(principals), func(f *acl.Filter, i int) { f.Principal, f.Permission = principals[i].p, principals[i].perm })
	expand(len(ops), func(f *acl.Filter, i int) { f.Operation = ops[i] })
	return fs, nil
}

func (a *aclFlags) selectors(f *pflag.FlagSet, verb string) {
	f.StringSliceVar(&a.principals, "principal", nil, verb+" the ACLs of this principal (allow or deny)")
	f.StringSliceVar(&a.allow, "allow", nil, verb+" the ALLOW ACLs of this principal")
	f.StringSliceVar(&a.deny, "deny", nil, verb+" the DENY ACLs of this principal")
	f.StringSliceVar(&a.ops, "operation", nil, verb+" the ACLs of this operation")
	f.StringVar(&a.host, "host", "", verb+" the ACLs of this host")
	a.resources(f)
}

func newACLListCmd(e *env) *cobra.Command {
	var (
		a      aclFlags
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "list [SELECTORS]",
		Short: "List ACLs (all, or those the flags select)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			fs, err := a.filters()
			if err != nil {
				return err
			}
			store, err := acl.OpenStore(e.data)
			if err != nil {
				return err
			}
			var out []acl.Binding
			seen := map[acl.Binding]bool{}
			for _, f := range fs {
				bs, err := store.List(f)
				if err != nil {
					return err
				}
				for _, b := range bs {
					if !seen[b] {
						seen[b] = true
						out = append(out, b)
					}
				}
			}
			if asJSON {
				js := make([]aclJSON, 0, len(out))
				for _, b := range out {
					js = append(js, toACLJSON(b))
				}
				return writeJSON(e, js)
			}
			if len(out) == 0 {
				fmt.Fprintln(e.stderr, "no ACLs match")
				return nil
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "PRINCIPAL\tPERMISSION\tOPERATION\tRESOURCE\tNAME\tPATTERN\tHOST")
			for _, b := range out {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", b.Principal, b.Permission, b.Operation, b.ResourceType, b.Name, b.Pattern, b.Host)
			}
			return tw.Flush()
		},
	}
	a.selectors(cmd.Flags(), "list")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newACLDeleteCmd(e *env) *cobra.Command {
	var a aclFlags
	cmd := &cobra.Command{
		Use:   "delete SELECTORS | --all",
		Short: "Delete the ACLs the flags select",
		Example: `  passbook acl delete --principal User:alice
  passbook acl delete --allow User:bob --topic orders --operation read
  passbook acl delete --all`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			selected := len(a.principals)+len(a.allow)+len(a.deny)+len(a.ops)+len(a.resourceList()) > 0 || a.host != ""
			if !selected && !a.all {
				return usagef("give what to delete (--principal, --topic, --operation …), or --all to delete every ACL")
			}
			fs, err := a.filters()
			if err != nil {
				return err
			}
			store, err := acl.OpenStore(e.data)
			if err != nil {
				return err
			}
			deleted, err := store.Delete(fs...)
			if err != nil {
				return err
			}
			n := 0
			for _, bs := range deleted {
				for _, b := range bs {
					n++
					fmt.Fprintf(e.stdout, "deleted: %s\n", describeBinding(b))
				}
			}
			if n == 0 {
				fmt.Fprintln(e.stderr, "no ACLs match: nothing deleted")
			} else {
				fmt.Fprintf(e.stderr, "%s deleted\n", plural(n, "ACL"))
			}
			return nil
		},
	}
	a.selectors(cmd.Flags(), "delete")
	cmd.Flags().BoolVar(&a.all, "all", false, "with no other selector: delete every ACL")
	return cmd
}

type aclJSON struct {
	Principal    string `json:"principal"`
	Permission   string `json:"permission"`
	Operation    string `json:"operation"`
	ResourceType string `json:"resource_type"`
	Name         string `json:"name"`
	Pattern      string `json:"pattern"`
	Host         string `json:"host"`
}

func toACLJSON(b acl.Binding) aclJSON {
	return aclJSON{b.Principal, strings.ToLower(b.Permission.String()), strings.ToLower(b.Operation.String()),
		strings.ToLower(b.ResourceType.String()), b.Name, strings.ToLower(b.Pattern.String()), b.Host}
}

func describeBinding(b acl.Binding) string {
	name := fmt.Sprintf("%q", b.Name)
	if b.Pattern == acl.Prefixed {
		name = fmt.Sprintf("names starting %q", b.Name)
	}
	host := ""
	if b.Host != acl.Wildcard {
		host = " from " + b.Host
	}
	return fmt.Sprintf("%s %s %s on %s %s%s", strings.ToLower(b.Permission.String()), b.Principal, b.Operation, strings.ToLower(b.ResourceType.String()), name, host)
}
