package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/passbook-log/passbook/internal/thousands"
	"github.com/passbook-log/passbook/lab"
	"github.com/passbook-log/passbook/storage"
	"github.com/spf13/cobra"
)

func newLabCmd(e *env) *cobra.Command {
	var (
		o                                  lab.Options
		commit, crash, predict, durability string
		asJSON, asMarkdown, child          bool
	)
	cmd := &cobra.Command{
		Use:   "lab",
		Short: "Run the three-part demonstration: append, crash and resume, replay",
		Long: `Run the lab on the real engine, in a temporary data directory (or in
--data DIR, which must be new or empty, and is kept):

  Part 1  append N records and watch the offsets come back 0, 1, 2, …
  Part 2  consumer orders-writer reads from offset 0 and dies at the crash
          offset (--crash-at, default 59,999), in the gap between its two
          steps. With --commit after (the default) it has processed that
          record and dies before committing past it: its committed offset
          is still the crash offset (59,999). With --commit before it has
          committed the next offset to read (60,000) and dies before
          processing the record. With --commit tx its work is a row in
          table lab_work of the offset store's database, written in the
          same SQLite transaction as its offset: it has written the row
          for the crash offset and dies before that transaction commits,
          so the row and the commit of 60,000 are lost together.
          A new consumer with the same name resumes from the committed
          offset. With --commit tx the missed and duplicated records are
          counted from lab_work itself.
  Part 3  consumer analytics-v2 replays everything from offset 0 while
          orders-writer stays where it is

--crash object abandons the consumer object, as the course's lab does;
--crash process runs it in a child process and kills that with SIGKILL.
Every commit is in the SQLite offset store before the next record is read,
so it survives either.

--commit after costs a duplicate, --commit before a gap; --commit tx costs
neither, because the work and the bookmark are one write. Its price is that
the work must live in the offset store's database, and a transaction per
record: the scoreboard shows its records/s against a consumer that commits
after each record (consumer after-pass, timed on the same log in the same
run, before Part 2).

Before it runs, write down four predictions (asked on a terminal, or given
with --predict): P1 the last offset, P2 how many records run twice after the
crash, P3 how many are missed, P4 how many the new consumer replays. Each is
judged spot on, off by one (and which mistake that is), too low or too high.`,
		Example: `  passbook lab
  passbook lab --predict 99999,1,0,100000
  passbook lab --commit before --crash process
  passbook lab --commit tx --crash process   # exactly once: 0 missed, 0 duplicated
  passbook lab --data ./lab-run --json      # keep the data directory to inspect it`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if child {
				return lab.ChildMain(cmd.Context(), os.Getenv(lab.ChildEnv), e.stdout)
			}
			if o.N < 1 {
				return usagef("--n %d: want at least 1 record", o.N)
			}
			if o.CrashAt < 0 || o.CrashAt >= int64(o.N) {
				return usagef("--crash-at %d: want an offset in [0, %d]", o.CrashAt, o.N-1)
			}
			var err error
			o.Commit = lab.Commit(commit)
			if !slices.Contains(lab.Commits, o.Commit) {
				return usagef("--commit %q: want after, before or tx", commit)
			}
			o.Crash = lab.Crash(crash)
			if durability != "" {
				if o.Durability, err = storage.ParseDurability(durability); err != nil {
					return usageError{err}
				}
			}
			if asJSON && asMarkdown {
				return usagef("--json and --markdown: choose one")
			}
			if predict != "" {
				if o.Predictions, err = parsePredictions(predict); err != nil {
					return usageError{err}
				}
			} else if !asJSON && !asMarkdown && isTerminal(e.stdout) && isTerminalReader(e.stdin) {
				if o.Predictions, err = askPredictions(e, o); err != nil {
					return err
				}
			}
			if o.CrashAt == 0 {
				o.CrashAt = lab.CrashAtFirst // 0 is the library's "default"
			}
			if f := cmd.Flag("data"); f != nil && f.Changed {
				o.Dir = e.data
			}
			r, err := lab.Run(cmd.Context(), o)
			if errors.Is(err, lab.ErrDirNotEmpty) {
				return usagef("--data %s: %w", e.data, err)
			}
			if errors.Is(err, lab.ErrOptions) {
				return usageError{err}
			}
			if err != nil {
				return err
			}
			switch {
			case asJSON:
				enc := json.NewEncoder(e.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(r)
			case asMarkdown:
				r.WriteMarkdown(e.stdout)
			default:
				r.WriteText(e.stdout)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.N, "n", 100_000, "records to append")
	f.Int64Var(&o.CrashAt, "crash-at", 59_999, "the offset at which the consumer dies: after processing it (--commit after) or after committing past it, before processing it (--commit before)")
	f.StringVar(&commit, "commit", "after", "when the consumer commits: after its work (at-least-once), before (at-most-once) or tx, in one transaction with it (exactly-once)")
	f.StringVar(&crash, "crash", "object", "how it dies: object (abandoned) or process (SIGKILL of a child process)")
	f.StringVar(&predict, "predict", "", "your predictions P1,P2,P3,P4 (whole numbers; leave one empty to skip it)")
	f.StringVar(&durability, "durability", "", "what an append survives: os (default), fsync or interval")
	f.BoolVar(&asJSON, "json", false, "print the figures as JSON")
	f.BoolVar(&asMarkdown, "markdown", false, "print a results write-up in Markdown")
	f.BoolVar(&o.Keep, "keep", false, "keep the temporary data directory and print where it is (a --data directory is always kept)")
	f.BoolVar(&child, "child", false, "internal: the consumer process of --crash process")
	f.MarkHidden("child")
	f.SetInterspersed(true)
	return cmd
}

// parsePredictions parses "P1,P2,P3,P4"; an empty field is no prediction.
func parsePredictions(s string) ([4]*int64, error) {
	var p [4]*int64
	fields := strings.Split(s, ",")
	if len(fields) != 4 {
		return p, fmt.Errorf("--predict %q: want four comma-separated numbers P1,P2,P3,P4", s)
	}
	for i, f := range fields {
		f = strings.ReplaceAll(strings.TrimSpace(f), "_", "")
		if f == "" {
			continue
		}
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil || n < 0 {
			return p, fmt.Errorf("--predict: P%d %q is not a whole number >= 0", i+1, fields[i])
		}
		p[i] = &n
	}
	return p, nil
}

// askPredictions asks for each prediction on the terminal.
func askPredictions(e *env, o lab.Options) ([4]*int64, error) {
	n := o.N
	crashAt := o.CrashAt
	questions := [4]string{
		fmt.Sprintf("P1. You append %s records to an empty log, offsets from 0. The last record's offset?", thousands.Int(n)),
		fmt.Sprintf("P2. The consumer commits after each record. It processes offset %s and dies before committing %s. How many records run twice?",
			thousands.Int(crashAt), thousands.Int(crashAt+1)),
		"P3. And how many of the records are never processed at all?",
		"P4. A brand-new consumer starts at offset 0 while the first sits at the end. How many records does it read?",
	}
	switch o.Commit {
	case lab.CommitBefore:
		questions[1] = fmt.Sprintf("P2. The consumer commits before each record. At offset %s it commits %s, then dies before processing that record. How many records run twice?",
			thousands.Int(crashAt), thousands.Int(crashAt+1))
	case lab.CommitTx:
		questions[1] = fmt.Sprintf("P2. The consumer writes each record's work as a table row in the same transaction as its offset. It writes the row for offset %s and dies before that transaction commits %s. How many records end up in the table twice?",
			thousands.Int(crashAt), thousands.Int(crashAt+1))
		questions[2] = "P3. And how many are missing from the table?"
	}
	var p [4]*int64
	in := bufio.NewReader(e.stdin)
	fmt.Fprintln(e.stdout, "Predict first (press Enter to skip one):")
	for i, q := range questions {
		for {
			fmt.Fprintf(e.stdout, "%s ", q)
			line, err := in.ReadString('\n')
			line = strings.ReplaceAll(strings.TrimSpace(line), ",", "")
			if line == "" {
				if err != nil {
					return p, nil
				}
				break
			}
			v, perr := strconv.ParseInt(line, 10, 64)
			if perr == nil && v >= 0 {
				p[i] = &v
				break
			}
			fmt.Fprintln(e.stdout, "  (a whole number, please)")
			if err != nil {
				return p, nil
			}
		}
	}
	fmt.Fprintln(e.stdout)
	return p, nil
}
