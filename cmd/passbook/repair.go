package main

import (
	"fmt"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/internal/thousands"
	"github.com/spf13/cobra"
)

func newRepairCmd(e *env) *cobra.Command {
	var dry, asJSON bool
	cmd := &cobra.Command{
		Use:   "repair",
		Short: "Fix what verify finds, moving damaged data aside, never deleting it",
		Long: `Repair a data directory that no process has open (stop the server first),
and print exactly what it did:

  - a torn tail (an unfinished write after the last fsync) is truncated, its
    bytes saved to <segment>.log.torn-<time>;
  - index and time index files that disagree with their segment are rebuilt;
  - a damaged segment is renamed <name>.corrupt-<time>, and its valid batches
    after the damage are copied into a new segment. Offsets stay dense and
    are never reused, so the segments before it are renamed
    <name>.aside-<time>: the log then starts after the damage, as after
    retention, and a consumer behind that point is told of the gap. The
    offsets taken out of the log are printed;
  - a committed offset past its partition's head is set to the head;
  - a committed offset that fails its checksum is deleted, its stored value
    printed: its consumer starts where its reset policy says.

No record is deleted: read what was moved aside with passbook dump FILE. Then
the directory is verified again; the exit code is 1 if anything is still
wrong (an offset store that fails SQLite's integrity check cannot be
repaired: restore it from a backup, or move it aside).

--json prints one object instead, with snake_case keys: dir, ok (nothing
left wrong; with --dry-run, nothing wrong now), dry_run, topics,
committed_offsets, partitions (topic, partition, segments, batches,
records, bytes, start, head after the repair, and lost: the offsets taken
out of the log), problems (kind, file, pos, from, to, detail, text: those
left, or with --dry-run those found), actions (what, file, detail, from,
to, text: done, or with --dry-run that would be done) and notes. The exit
code is the same.`,
		Example: `  passbook repair --data ./data --dry-run
  passbook repair --data ./data`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			pr := &lazyProgress{stderr: e.stderr, name: "repair"} // it prints its report after the bar is done
			r, err := passbook.Repair(e.data, &passbook.CheckOptions{DryRun: dry, Progress: pr.update})
			pr.done()
			if err != nil {
				return noDataDirHint(err)
			}
			if asJSON {
				if err := writeJSON(e, toCheckJSON(r, dry)); err != nil {
					return err
				}
				if ps := r.AllProblems(); !dry && len(ps) > 0 {
					return fmt.Errorf("%s left that repair cannot fix", plural(len(ps), "problem"))
				}
				return nil
			}
			would := ""
			if dry {
				would = "would "
			}
			n := 0
			for _, p := range r.Partitions {
				for _, a := range p.Repair.Actions {
					fmt.Fprintf(e.stdout, "%s%s\n", would, a)
					n++
				}
				if p.Repair.Lost > 0 {
					fmt.Fprintf(e.stdout, "  %s/%d: %s %s out of the log; it %s [%s, %s)\n", p.Topic, p.Partition, would+verbTake(dry),
						pluralInt(p.Repair.Lost, "offset"), wouldHold(dry), thousands.Int(p.Repair.Start), thousands.Int(p.Repair.Head))
				}
			}
			for _, a := range r.Actions {
				fmt.Fprintf(e.stdout, "%s%s\n", would, a)
				n++
			}
			if n == 0 {
				fmt.Fprintln(e.stdout, "nothing to repair")
			}
			ps := r.AllProblems()
			if dry {
				// Nothing changed: the problems are verify's.
				fmt.Fprintf(e.stdout, "dry run: %s, %s found, nothing changed\n", plural(n, "action"), plural(len(ps), "problem"))
				return nil
			}
			for _, p := range ps {
				fmt.Fprintln(e.stdout, "STILL WRONG", p)
			}
			printSummary(e.stdout, "repaired", r)
			if len(ps) > 0 {
				return fmt.Errorf("%s left that repair cannot fix", plural(len(ps), "problem"))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&dry, "dry-run", false, "print what repair would do, and do nothing")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print what it did (or would do) as JSON")
	return cmd
}

func verbTake(dry bool) string {
	if dry {
		return "take"
	}
	return "took"
}

func wouldHold(dry bool) string {
	if dry {
		return "would then hold"
	}
	return "now holds"
}
