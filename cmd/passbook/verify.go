package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/internal/thousands"
	"github.com/spf13/cobra"
)

func newVerifyCmd(e *env) *cobra.Command {
	var quiet, asJSON bool
	cmd := &cobra.Command{
		Use:   "verify",
		Short: "Check every batch, index and committed offset of a data directory",
		Long: `Check a data directory that no process has open (stop the server first):
every batch of every segment (its header, CRC-32C and records), that offsets
run densely from batch to batch and segment to segment (compacted topics
skip offsets only where compaction may), that every index and time index
entry leads to its batch, the checkpoints, every topic's configuration, and
the offset store (SQLite's integrity check, every committed offset's
checksum, and every committed offset within [0, head] of its partition).

Each problem is printed with its file and byte position and the offsets it
affects. The exit code is 0 when nothing is wrong, 1 otherwise. See
passbook repair to fix what can be fixed.

--json prints one object instead, with snake_case keys: dir, ok,
topics, committed_offsets, partitions (topic, partition, segments,
batches, records, bytes, start, head), problems (kind, file, pos, from,
to, detail, and text: the line verify prints), actions (always empty
here) and notes. The exit code is the same.`,
		Example: `  passbook verify --data ./data
  passbook verify --data ./data --quiet && echo clean`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			pr := &lazyProgress{stderr: e.stderr, name: "verify"} // it prints its report after the bar is done
			r, err := passbook.Verify(e.data, &passbook.CheckOptions{Progress: pr.update})
			pr.done()
			if err != nil {
				return noDataDirHint(err)
			}
			ps := r.AllProblems()
			if asJSON {
				if err := writeJSON(e, toCheckJSON(r, false)); err != nil {
					return err
				}
				if len(ps) > 0 {
					return fmt.Errorf("%s found (see what passbook repair --dry-run --data %s would do)", plural(len(ps), "problem"), e.data)
				}
				return nil
			}
			if !quiet {
				for _, n := range r.Notes {
					fmt.Fprintln(e.stdout, "note:", n)
				}
				for _, p := range r.Partitions {
					for _, n := range p.Report.Notes {
						fmt.Fprintln(e.stdout, "note:", n)
					}
				}
			}
			for _, p := range ps {
				fmt.Fprintln(e.stdout, "PROBLEM", p)
			}
			for _, p := range r.Partitions {
				if p.Report.Fenced != "" {
					fmt.Fprintf(e.stdout, "FENCED %s/%d: passbook serve cannot open it and answers KAFKA_STORAGE_ERROR for it until passbook repair mends it\n", p.Topic, p.Partition)
				}
			}
			if !quiet || len(ps) > 0 {
				printSummary(e.stdout, "verified", r)
			}
			if len(ps) > 0 {
				return fmt.Errorf("%s found (see what passbook repair --dry-run --data %s would do)", plural(len(ps), "problem"), e.data)
			}
			return nil
		},
	}
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "print only problems")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}

// printSummary prints the totals of a check in one line, with thousands
// separators.
func printSummary(w io.Writer, verb string, r *passbook.CheckReport) {
	var segs, batches, records, bytes int64
	for _, p := range r.Partitions {
		rep := p.Report
		if p.Repair != nil && p.Repair.After != nil {
			rep = p.Repair.After
		}
		segs += int64(rep.Segments)
		batches += rep.Batches
		records += rep.Records
		bytes += rep.Bytes
	}
	fmt.Fprintf(w, "%s %s, %s, %s: %s in %s, %s bytes; %s: %s\n", verb,
		plural(r.Topics, "topic"), plural(len(r.Partitions), "partition"), plural(int(segs), "segment"),
		pluralInt(records, "record"), pluralInt(batches, "batch"), thousands.Int(bytes),
		pluralInt(int64(r.Offsets), "committed offset"), problems(len(r.AllProblems())))
}

func problems(n int) string {
	if n == 0 {
		return "no problems"
	}
	return plural(n, "problem")
}

func plural(n int, word string) string { return pluralInt(int64(n), word) }

func pluralInt(n int64, word string) string {
	if n == 1 {
		return "1 " + word
	}
	if strings.HasSuffix(word, "ch") {
		return thousands.Int(n) + " " + word + "es"
	}
	return thousands.Int(n) + " " + word + "s"
}

// lazyProgress is a progress bar started at the first update, when the
// total is known.
type lazyProgress struct {
	stderr io.Writer
	name   string
	bar    *progress
	last   int64
}

func (l *lazyProgress) update(done, total int64) {
	if l.bar == nil {
		l.bar = newProgress(nil, l.stderr, l.name, total, unitBytes) // the report comes after the bar
	}
	l.bar.add(int(done - l.last))
	l.last = done
}

func (l *lazyProgress) done() {
	if l.bar != nil {
		l.bar.finish(nil)
	}
}
