package lab

import (
	"fmt"
	"io"
	"strings"

	"github.com/passbook-log/passbook/internal/thousands"
)

const rule = "=============================================================================="

func heading(w io.Writer, title string) {
	fmt.Fprintf(w, "%s\n%s\n%s\n", rule, title, rule)
}

func offsetsList(offs []int64) string {
	s := make([]string, len(offs))
	for i, o := range offs {
		s[i] = fmt.Sprint(o)
	}
	return "[" + strings.Join(s, ", ") + "]"
}

func rate(n int, ms float64) string {
	if ms <= 0 {
		return "—"
	}
	return thousands.Float(float64(n) / ms * 1000)
}

// WriteText writes the run as the lab prints it: the three parts, the
// scoreboard and the closing summary.
func (r *Result) WriteText(w io.Writer) {
	n := thousands.Int(r.N)
	heading(w, "Part 1: append. Every record goes on the end and is handed its offset.")
	fmt.Fprintf(w, "records appended:                %s\n", thousands.Int(r.Appended))
	fmt.Fprintf(w, "first three offsets handed back: %s\n", offsetsList(r.FirstOffsets))
	fmt.Fprintf(w, "last three offsets handed back:  %s\n", offsetsList(r.LastOffsets))
	fmt.Fprintf(w, "offset of the last record:       %s\n", thousands.Int(r.LastOffset))
	fmt.Fprintf(w, "(%s records in %s ms, %s records/s, written to segment files on disk)\n",
		n, thousands.Float(r.AppendMs), rate(r.Appended, r.AppendMs))
	fmt.Fprintf(w, `
The first record got offset 0 and each one after got the next number up,
because an offset is nothing but a record's place in line. Nothing was
edited or moved, so offset 0 will name the same record for as long as the
log keeps it.
`)

	heading(w, "Part 2: a consumer keeps its own offset, crashes, and picks up again.")
	switch r.Commit {
	case CommitBefore:
		fmt.Fprintf(w, "crashed before processing:       offset %s (committed past it first)\n", thousands.Int(r.CrashedAt))
	case CommitTx:
		fmt.Fprintf(w, "crashed inside the transaction:  offset %s (its work written, not committed)\n", thousands.Int(r.CrashedAt))
	default:
		fmt.Fprintf(w, "crashed after processing:        offset %s (before committing past it)\n", thousands.Int(r.CrashedAt))
	}
	if r.Commit == CommitTx && r.Tx != nil {
		fmt.Fprintf(w, "handler runs before the crash:   %s\n", thousands.Int(r.ProcessedBeforeCrash))
		fmt.Fprintf(w, "work rows it left committed:     %s (table %s)\n", thousands.Int(r.Tx.RowsAtCrash), r.Tx.WorkTable)
	} else {
		fmt.Fprintf(w, "processed before the crash:      %s\n", thousands.Int(r.ProcessedBeforeCrash))
	}
	if r.NothingCommitted {
		fmt.Fprintf(w, "committed offset it left behind: none (so a restart starts at 0)\n")
	} else {
		fmt.Fprintf(w, "committed offset it left behind: %s\n", thousands.Int(r.CommittedAtCrash))
	}
	fmt.Fprintf(w, "new consumer resumed from:       %s\n", thousands.Int(r.ResumedFrom))
	fmt.Fprintf(w, "processed after the restart:     %s\n", thousands.Int(r.ProcessedAfterRestart))
	fmt.Fprintln(w, "----")
	rel := "= N"
	if d := r.TotalProcessed - r.N; d > 0 {
		rel = fmt.Sprintf("= N + %d", d)
	} else if d < 0 {
		rel = fmt.Sprintf("= N - %d", -d)
	}
	if r.Commit == CommitTx && r.Tx != nil {
		rel += ", counted from the work table's " + records(r.Tx.Rows)
	}
	fmt.Fprintf(w, "total records processed:         %s (%s)\n", thousands.Int(r.TotalProcessed), rel)
	fmt.Fprintf(w, "records MISSED (processed 0x):   %s%s\n", thousands.Int(r.Missed), atOffsets(r.MissedOffsets))
	fmt.Fprintf(w, "records DUPLICATED (2x):         %s%s\n", thousands.Int(r.Duplicated), atOffsets(r.DuplicateOffsets))
	how := "The consumer object was abandoned mid-stream, as if its process had died."
	if r.Crash == CrashProcess {
		how = "The consumer ran in its own process, which was killed with SIGKILL: a real crash."
	}
	var why string
	switch r.Commit {
	case CommitTx:
		why = fmt.Sprintf("This consumer writes its work (a row in table %s) and its offset in ONE SQLite transaction. It wrote the row for offset %s and died before that transaction committed, so the row went with the commit of %s: the bookmark still said %s and the table had no row for %s. The restart ran offset %s again, and that run's row is the only one there. Counted in the table: %s missed, %s duplicated. That is exactly-once, for work that lives in the same database as the bookmark.",
			WorkTable, thousands.Int(r.CrashedAt), thousands.Int(r.CrashedAt+1), thousands.Int(r.CommittedAtCrash),
			thousands.Int(r.CrashedAt), thousands.Int(r.CrashedAt), thousands.Int(r.Missed), thousands.Int(r.Duplicated))
	case CommitBefore:
		why = fmt.Sprintf("This consumer commits BEFORE it works. At offset %s it committed %s (the next offset to read) and died before processing that record. The restart believed the bookmark and began at %s, so offset %s was never processed: %s missed, %s duplicated. That is at-most-once: a crash costs a gap, never a repeat.",
			thousands.Int(r.CrashedAt), thousands.Int(r.CrashedAt+1), thousands.Int(r.ResumedFrom),
			thousands.Int(r.CrashedAt), thousands.Int(r.Missed), thousands.Int(r.Duplicated))
	default:
		why = fmt.Sprintf("This consumer commits AFTER it works. It processed offset %s and died before committing %s, so the bookmark still said %s: the new consumer processed that record again and carried on. %s missed, %s duplicated. That is at-least-once: a crash costs a repeat, never a gap.",
			thousands.Int(r.CrashedAt), thousands.Int(r.CrashedAt+1), thousands.Int(r.CommittedAtCrash),
			thousands.Int(r.Missed), thousands.Int(r.Duplicated))
	}
	fmt.Fprintf(w, "\n%s\n%s\n", wrap(how), wrap(why))

	heading(w, "Part 3: replay. A new consumer reads all of history on its own bookmark.")
	fmt.Fprintf(w, "records the log still keeps:     %s\n", thousands.Int(r.N))
	fmt.Fprintf(w, "consumer A (%s) at:   %s\n", consumerA, thousands.Int(r.AOffset))
	fmt.Fprintf(w, "consumer B (%s) starts at: %s\n", consumerB, thousands.Int(r.BStart))
	fmt.Fprintln(w, "----")
	fmt.Fprintf(w, "one log, two bookmarks:          A at %s, B at %s\n", thousands.Int(r.AOffset), thousands.Int(r.BStart))
	fmt.Fprintf(w, "records B replayed:              %s\n", thousands.Int(r.BReplayed))
	fmt.Fprintf(w, "B read offsets 0..%s in order: %v\n", thousands.Int(r.N-1), r.BInOrder)
	moved := "(not moved: the two bookmarks are independent)"
	if r.AOffsetAfter != r.AOffset {
		moved = "(MOVED: that should never happen)"
	}
	fmt.Fprintf(w, "A's offset after B finished:     %s %s\n", thousands.Int(r.AOffsetAfter), moved)
	fmt.Fprintf(w, "B's offset now:                  %s\n", thousands.Int(r.BOffset))
	fmt.Fprintf(w, `
The log never deleted what A had read, so B could start at offset 0 and
rebuild everything on a bookmark of its own while A's stayed exactly where
it was. A queue hands each message out and forgets it; a reader that joins
later finds nothing of the past there to read.
`)

	heading(w, "Scoreboard")
	labels := [4]string{"P1 last offset after append", "P2 duplicates after crash", "P3 records missed after crash", "P4 records replayed from 0"}
	for i, actual := range r.Actuals() {
		you := "—"
		if p := r.Predictions[i]; p != nil {
			you = thousands.Int(*p)
		}
		fmt.Fprintf(w, "%-31s you = %-9s actual = %-9s %s\n", labels[i], you, thousands.Int(actual), r.Verdicts[i])
		if note := r.VerdictNotes[i]; note != "" {
			fmt.Fprintf(w, "%s\n", indent(wrapAt(note, 72), "    "))
		}
	}

	if r.Commit == CommitTx && r.Tx != nil {
		r.writeThirdAnswer(w)
	}

	heading(w, "What to take away")
	fmt.Fprintln(w, r.Summary())
	total := r.PartMs[0] + r.PartMs[1] + r.PartMs[2]
	pass := ""
	if r.Tx != nil {
		total += r.Tx.AfterMs
		pass = fmt.Sprintf(", the after pass %s ms", thousands.Float(r.Tx.AfterMs))
	}
	fmt.Fprintf(w, "\n(part 1 %s ms, part 2 %s ms, part 3 %s ms%s; %s in all)\n",
		thousands.Float(r.PartMs[0]), thousands.Float(r.PartMs[1]), thousands.Float(r.PartMs[2]), pass, fmtMs(total))
	if r.Dir != "" {
		fmt.Fprintf(w, "the data directory was kept at %s\n", r.Dir)
	}
}

func fmtMs(ms float64) string {
	if ms >= 1000 {
		return fmt.Sprintf("%.2f s", ms/1000)
	}
	return fmt.Sprintf("%.0f ms", ms)
}

func atOffsets(offs []int64) string {
	if len(offs) == 0 {
		return ""
	}
	if len(offs) > 10 {
		return " at offsets " + offsetsList(offs[:10]) + " …"
	}
	return " at offset " + offsetsList(offs)
}

// indent puts prefix before every line of s.
func indent(s, prefix string) string {
	return prefix + strings.ReplaceAll(s, "\n", "\n"+prefix)
}

// wrap folds a sentence at 74 columns.
func wrap(s string) string { return wrapAt(s, 74) }

// wrapAt folds a sentence at width columns.
func wrapAt(s string, width int) string {
	var b strings.Builder
	col := 0
	for i, word := range strings.Fields(s) {
		if i > 0 {
			if col+1+len(word) > width {
				b.WriteByte('\n')
				col = 0
			} else {
				b.WriteByte(' ')
				col++
			}
		}
		b.WriteString(word)
		col += len(word)
	}
	return b.String()
}

// Summary is the closing paragraph, built from the measured figures.
func (r *Result) Summary() string {
	var crash string
	switch r.Commit {
	case CommitBefore:
		crash = fmt.Sprintf("The first consumer committed before its work, crashed in the gap, and came back %s short with %s repeated: at-most-once, the price of putting the bookmark first.",
			records(r.Missed), thousands.Int(r.Duplicated))
	case CommitTx:
		crash = fmt.Sprintf("The first consumer put its work and its bookmark in one transaction, crashed before it committed, and came back with %s repeated and %s lost: exactly-once, the price of keeping the work in the bookmark's database.",
			thousands.Int(r.Duplicated), thousands.Int(r.Missed))
	default:
		crash = fmt.Sprintf("The first consumer committed after its work, crashed in the gap, and came back to repeat %s and lose %s: at-least-once, the price of putting the work first.",
			records(r.Duplicated), thousands.Int(r.Missed))
	}
	return wrap(fmt.Sprintf("%s records went into one append-only log at offsets 0 to %s. %s Then a brand-new consumer replayed all %s records from offset 0 on its own bookmark while the first one stayed at %s. The log keeps the records; each reader keeps its place. Kafka is built on that split.",
		thousands.Int(r.Appended), thousands.Int(r.LastOffset), crash, thousands.Int(r.BReplayed), thousands.Int(r.AOffsetAfter)))
}

// WriteMarkdown writes a results page: the run's output and the two lines
// the exercise asks for, filled in from the figures.
func (r *Result) WriteMarkdown(w io.Writer) {
	fmt.Fprintf(w, "# passbook lab: results\n\n")
	when := "after processing offset %s and before committing past it"
	switch r.Commit {
	case CommitBefore:
		when = "after committing past offset %s and before processing it"
	case CommitTx:
		when = "after writing the work of offset %s and before its transaction commits"
	}
	how := "the consumer object abandoned"
	if r.Crash == CrashProcess {
		how = "SIGKILL of the consumer's process"
	}
	fmt.Fprintf(w, "N = %s; commit %s; the consumer dies "+when+" (%s); appends with durability %s.\n\n",
		thousands.Int(r.N), r.Commit, thousands.Int(r.CrashedAt), how, r.Durability)
	fmt.Fprintf(w, "## Output\n\n```\n")
	r.WriteText(w)
	fmt.Fprintf(w, "```\n\n## The two lines\n\n")
	switch r.Commit {
	case CommitTx:
		fmt.Fprintf(w, "1. After the crash %s lost and %s twice, because the consumer wrote its work and its bookmark in one transaction: it wrote the row for offset %s and died before committing %s with it, so both rolled back, the restart began at %s, and its run of that record is the only one in the table.\n",
			wasWere(r.Missed), ranTwice(r.Duplicated), thousands.Int(r.CrashedAt), thousands.Int(r.CrashedAt+1), thousands.Int(r.CommittedAtCrash))
	case CommitBefore:
		fmt.Fprintf(w, "1. After the crash %s lost and %s twice, because the consumer saved its bookmark before doing the work: it committed %s and died before processing offset %s, so the restart began at %s and skipped it.\n",
			wasWere(r.Missed), ranTwice(r.Duplicated), thousands.Int(r.CrashedAt+1), thousands.Int(r.CrashedAt), thousands.Int(r.ResumedFrom))
	default:
		fmt.Fprintf(w, "1. After the crash %s lost and %s twice, because the consumer saved its bookmark only after doing the work: it processed offset %s and died before committing %s, so the restart began at %s and did it again.\n",
			wasWere(r.Missed), ranTwice(r.Duplicated), thousands.Int(r.CrashedAt), thousands.Int(r.CrashedAt+1), thousands.Int(r.CommittedAtCrash))
	}
	fmt.Fprintf(w, "2. A brand-new consumer could replay all %s records because the log keeps records after they are read and each reader owns its offset; a queue removes a message once it is delivered, so a late reader would have had nothing to replay.\n",
		thousands.Int(r.BReplayed))
}

// records is "1 record" or "N records", with thousands separators.
func records(n int) string {
	if n == 1 {
		return "1 record"
	}
	return thousands.Int(n) + " records"
}

// wasWere is "1 record was" or "N records were".
func wasWere(n int) string {
	if n == 1 {
		return "1 record was"
	}
	return records(n) + " were"
}

// ranTwice is "1 ran" or "N ran", ending "… ran twice" in the sentence.
func ranTwice(n int) string { return thousands.Int(n) + " ran" }

// writeThirdAnswer is the scoreboard's account of CommitTx: why a third
// answer exists, and what it cost in this run.
func (r *Result) writeThirdAnswer(w io.Writer) {
	f := r.Tx
	fmt.Fprintf(w, "\nWhy there is a third answer, and what it costs:\n\n")
	fmt.Fprintf(w, "%s\n\n", wrap(fmt.Sprintf("Committing before or after is a choice between two failures because the work and the bookmark are two writes, and a crash can fall between them. Put both in one transaction of one database and there is no between: the crash at offset %s came before the commit, so the row and the bookmark rolled back together and the restart did the record as if for the first time. The handler still ran on it twice; its work counts once.",
		thousands.Int(r.CrashedAt))))
	fmt.Fprintf(w, "%s\n\n", wrap("It costs two things. The work must be a write to the offset store's own database: a charge to a card or an e-mail sent cannot be rolled back with a bookmark, and still needs commit-after and an idempotency key. And every record is a transaction that carries its work row as well as its offset:"))
	fmt.Fprintf(w, "  committing after (%s, %s records):  %s records/s\n", afterPass, thousands.Int(f.AfterRecords), rate(f.AfterRecords, f.AfterMs))
	where := "both drains"
	if r.Crash == CrashProcess {
		where = "the resumed consumer"
	}
	fmt.Fprintf(w, "  in one transaction (%s, %s records): %s records/s\n", where, thousands.Int(f.TxRecords), rate(f.TxRecords, f.TxMs))
	if a, t := f.AfterRate(), f.TxRate(); a > 0 && t > 0 {
		fmt.Fprintf(w, "  the transaction's rate is %.2f× committing after's, measured in this run\n", t/a)
	}
}
