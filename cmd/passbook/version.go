package main

import (
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// version is the module version and the VCS revision the binary was built
// from, as the Go toolchain records them: "v1.2.3", or "(devel)" for a
// build from a checkout, then the revision (with "+dirty" when the tree
// had uncommitted changes), its commit time and the Go version.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown: built without module support)"
	}
	return formatVersion(bi)
}

func formatVersion(bi *debug.BuildInfo) string {
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	var extra []string
	if rev := settings["vcs.revision"]; rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if settings["vcs.modified"] == "true" {
			rev += "+dirty"
		}
		extra = append(extra, "revision "+rev)
	} else {
		extra = append(extra, "no VCS revision recorded")
	}
	if t := settings["vcs.time"]; t != "" {
		extra = append(extra, "committed "+t)
	}
	extra = append(extra, bi.GoVersion)
	return fmt.Sprintf("%s (%s)", v, strings.Join(extra, ", "))
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version: module version, VCS revision and Go version",
		Long: `Print the module version and the VCS revision the binary was built from,
as the Go toolchain recorded them: a release shows its tag; a go build or go
run from a checkout shows "(devel)" and the commit, "+dirty" when the tree
had uncommitted changes, and the commit's time. passbook --version prints
the same.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			fmt.Fprintln(cmd.OutOrStdout(), "passbook", version())
			return nil
		},
	}
}
