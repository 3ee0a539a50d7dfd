package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/passbook-log/passbook"
)

// The lab, through the built binary, in every mode. The child process of
// --crash process is the built binary too ("passbook lab --child").

// labRun runs the built passbook with TMPDIR set to a directory of the
// test, so that a temporary data directory the lab keeps is cleaned up.
func labRun(t *testing.T, tmp string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return runProcess(t, passbookBinary(t), t.TempDir(), append(binaryEnv(), "TMPDIR="+tmp), "", args...)
}

// labJSON is the part of `passbook lab --json` the tests read.
type labJSON struct {
	Commit           string    `json:"commit"`
	Crash            string    `json:"crash"`
	Durability       string    `json:"durability"`
	DataDir          string    `json:"data_dir"`
	N                int       `json:"n"`
	LastOffset       int64     `json:"last_offset"`
	CrashedAt        int64     `json:"crashed_at"`
	ProcessedBefore  int       `json:"processed_before_crash"`
	CommittedAtCrash int64     `json:"committed_at_crash"`
	ResumedFrom      int64     `json:"resumed_from"`
	ProcessedAfter   int       `json:"processed_after_restart"`
	TotalProcessed   int       `json:"total_processed"`
	Missed           int       `json:"missed"`
	Duplicated       int       `json:"duplicated"`
	MissedOffsets    []int64   `json:"missed_offsets"`
	DuplicateOffsets []int64   `json:"duplicate_offsets"`
	AOffset          int64     `json:"a_offset"`
	BReplayed        int       `json:"b_replayed"`
	BInOrder         bool      `json:"b_in_order"`
	AOffsetAfter     int64     `json:"a_offset_after"`
	BOffset          int64     `json:"b_offset"`
	Verdicts         [4]string `json:"verdicts"`
	VerdictNotes     [4]string `json:"verdict_notes"`
}

func decodeLab(t *testing.T, out string) labJSON {
	t.Helper()
	var r labJSON
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("lab --json: %v:\n%s", err, out)
	}
	return r
}

// TestBinary_Lab_Hook is the repository's before-stop hook, exactly.
func TestBinary_Lab_Hook(t *testing.T) {
	out, errOut, code := labRun(t, t.TempDir(), "lab", "--json", "--n", "2000", "--crash-at", "1199", "--crash", "process", "--predict", "1999,1,0,2000")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	r := decodeLab(t, out)
	if want := [4]string{"spot on", "spot on", "spot on", "spot on"}; r.Verdicts != want {
		t.Errorf("verdicts %q, want %q", r.Verdicts, want)
	}
	if r.Commit != "after" || r.Crash != "process" || r.Durability != "os" {
		t.Errorf("setup commit=%q crash=%q durability=%q, want after, process, os", r.Commit, r.Crash, r.Durability)
	}
}

// TestBinary_Lab_Modes: every crash mode under both commit orders, with
// the figures each must produce.
func TestBinary_Lab_Modes(t *testing.T) {
	type figures struct {
		processedBefore, committed, resumed, processedAfter, total, missed, duplicated int
		at                                                                             []int64 // the missed or duplicated offset
	}
	after := figures{1200, 1199, 1199, 801, 2001, 0, 1, []int64{1199}}
	before := figures{1199, 1200, 1200, 800, 1999, 1, 0, []int64{1199}}
	for _, tc := range []struct {
		crash, commit string
		want          figures
		predict       string
		verdicts      [4]string
	}{
		{"object", "after", after, "1999,1,0,2000", [4]string{"spot on", "spot on", "spot on", "spot on"}},
		{"process", "after", after, "2000,0,1,1999", [4]string{"off by one", "too low", "too high", "off by one"}},
		{"object", "before", before, "1999,0,1,2000", [4]string{"spot on", "spot on", "spot on", "spot on"}},
		{"process", "before", before, "1999,1,0,2001", [4]string{"spot on", "too high", "too low", "off by one"}},
	} {
		t.Run(tc.crash+"-"+tc.commit, func(t *testing.T) {
			out, errOut, code := labRun(t, t.TempDir(), "lab", "--json", "--n", "2000", "--crash-at", "1199",
				"--crash", tc.crash, "--commit", tc.commit, "--predict", tc.predict)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			r := decodeLab(t, out)
			w := tc.want
			got := figures{r.ProcessedBefore, int(r.CommittedAtCrash), int(r.ResumedFrom), r.ProcessedAfter, r.TotalProcessed, r.Missed, r.Duplicated,
				append(r.MissedOffsets, r.DuplicateOffsets...)}
			if fmt.Sprint(got) != fmt.Sprint(w) {
				t.Errorf("part 2 figures %+v, want %+v", got, w)
			}
			if r.Commit != tc.commit || r.Crash != tc.crash || r.CrashedAt != 1199 || r.LastOffset != 1999 {
				t.Errorf("commit %q crash %q crashed_at %d last_offset %d", r.Commit, r.Crash, r.CrashedAt, r.LastOffset)
			}
			if r.BReplayed != 2000 || !r.BInOrder || r.AOffset != 2000 || r.AOffsetAfter != 2000 || r.BOffset != 2000 {
				t.Errorf("part 3 figures %+v", r)
			}
			if r.Verdicts != tc.verdicts {
				t.Errorf("verdicts %q, want %q (notes %q)", r.Verdicts, tc.verdicts, r.VerdictNotes)
			}
			for i, v := range r.Verdicts {
				if (v == "spot on") != (r.VerdictNotes[i] == "") {
					t.Errorf("P%d %s with note %q", i+1, v, r.VerdictNotes[i])
				}
			}
			if r.DataDir != "" {
				t.Errorf("a temporary data directory reported as kept: %s", r.DataDir)
			}
		})
	}
}

// TestBinary_Lab_CrashAtEdges: the crash can fall on the first and the
// last offset; a crash point outside the log is refused.
func TestBinary_Lab_CrashAtEdges(t *testing.T) {
	for _, tc := range []struct {
		n, crashAt string
		commit     string
		want       string // in the JSON
	}{
		{"10", "0", "after", `"duplicate_offsets": [` + "\n    0\n  ]"},
		{"10", "0", "before", `"missed_offsets": [` + "\n    0\n  ]"},
		{"10", "9", "after", `"duplicate_offsets": [` + "\n    9\n  ]"},
		{"1", "0", "before", `"missed_offsets": [` + "\n    0\n  ]"},
	} {
		out, errOut, code := labRun(t, t.TempDir(), "lab", "--json", "--n", tc.n, "--crash-at", tc.crashAt, "--commit", tc.commit, "--crash", "process")
		if code != 0 || !strings.Contains(out, tc.want) || !strings.Contains(out, `"crashed_at": `+tc.crashAt+",") {
			t.Errorf("--n %s --crash-at %s --commit %s: exit %d, stderr %q, output lacks %q:\n%s", tc.n, tc.crashAt, tc.commit, code, errOut, tc.want, out)
		}
	}
	for _, crashAt := range []string{"-1", "10", "-5"} {
		if _, errOut, code := labRun(t, t.TempDir(), "lab", "--n", "10", "--crash-at", crashAt); code != 2 || !strings.Contains(errOut, "want an offset in [0, 9]") {
			t.Errorf("--crash-at %s: exit %d, stderr %q; want 2", crashAt, code, errOut)
		}
	}
}

// TestBinary_Lab_Text: the scoreboard and Part 2 say what happened in
// each commit order, and name an off-by-one as such.
func TestBinary_Lab_Text(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--crash", "process", "--predict", "2000,1,0,2000"}, []string{
			"crashed after processing:        offset 1,199 (before committing past it)",
			"It processed offset 1,199 and died before committing 1,200, so the bookmark still said 1,199",
			"killed with SIGKILL",
			"P1 last offset after append     you = 2,000     actual = 1,999     off by one\n    that is the count; the last offset is count − 1",
			"P2 duplicates after crash       you = 1         actual = 1         spot on\n",
		}},
		{[]string{"--commit", "before", "--predict", "1999,0,0,2000"}, []string{
			"crashed before processing:       offset 1,199 (committed past it first)",
			"At offset 1,199 it committed 1,200 (the next offset to read) and died before processing that record.",
			"P3 records missed after crash   you = 0         actual = 1         too low\n    that is commit-after's answer",
		}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out, errOut, code := labRun(t, t.TempDir(), append([]string{"lab", "--n", "2000", "--crash-at", "1199"}, tc.args...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			flat := strings.ReplaceAll(out, "\n", " ") // for the paragraphs, wrapped to fit
			for _, want := range tc.want {
				if !strings.Contains(out, want) && !strings.Contains(flat, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
			if strings.Contains(out, "close enough") || strings.Contains(out, "right after processing") {
				t.Errorf("output says what the lab no longer claims:\n%s", out)
			}
		})
	}
}

// TestBinary_Lab_Markdown: the write-up says how the consumer died.
func TestBinary_Lab_Markdown(t *testing.T) {
	for _, tc := range []struct {
		crash, commit string
		want          []string
	}{
		{"process", "before", []string{
			"N = 2,000; commit before; the consumer dies after committing past offset 1,199 and before processing it (SIGKILL of the consumer's process); appends with durability os.",
			"it committed 1,200 and died before processing offset 1,199, so the restart began at 1,200 and skipped it.",
		}},
		{"process", "tx", []string{
			"N = 2,000; commit tx; the consumer dies after writing the work of offset 1,199 and before its transaction commits (SIGKILL of the consumer's process); appends with durability os.",
			"After the crash 0 records were lost and 0 ran twice, because the consumer wrote its work and its bookmark in one transaction",
		}},
		{"object", "after", []string{
			"N = 2,000; commit after; the consumer dies after processing offset 1,199 and before committing past it (the consumer object abandoned); appends with durability os.",
			"it processed offset 1,199 and died before committing 1,200, so the restart began at 1,199 and did it again.",
		}},
	} {
		t.Run(tc.crash+"-"+tc.commit, func(t *testing.T) {
			out, errOut, code := labRun(t, t.TempDir(), "lab", "--markdown", "--n", "2000", "--crash-at", "1199", "--crash", tc.crash, "--commit", tc.commit)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			for _, want := range append(tc.want, "# passbook lab: results", "## The two lines") {
				if !strings.Contains(out, want) {
					t.Errorf("markdown lacks %q:\n%s", want, out)
				}
			}
		})
	}
}

// TestBinary_Lab_Keep: --keep keeps the temporary data directory, says
// where, and it holds the run's log and offsets; without --keep nothing
// is left behind.
func TestBinary_Lab_Keep(t *testing.T) {
	for _, crash := range []string{"object", "process"} {
		t.Run(crash, func(t *testing.T) {
			tmp := t.TempDir()
			out, errOut, code := labRun(t, tmp, "lab", "--n", "2000", "--crash-at", "1199", "--crash", crash, "--keep")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			_, after, ok := strings.Cut(out, "the data directory was kept at ")
			dir := strings.TrimSpace(after)
			if !ok || filepath.Dir(dir) != tmp {
				t.Fatalf("kept directory %q, want one in %s:\n%s", dir, tmp, out)
			}
			if entries, err := os.ReadDir(dir); err != nil || len(entries) == 0 {
				t.Fatalf("kept directory %s: %v, %d entries", dir, err, len(entries))
			}
			// The kept directory is a data directory like any other.
			if out, errOut, code := runBinary(t, t.TempDir(), "", "--data", dir, "topic", "list"); code != 0 || !strings.Contains(out, "orders") {
				t.Errorf("topic list on the kept directory: exit %d, %q %q", code, out, errOut)
			}

			tmp = t.TempDir()
			if _, errOut, code := labRun(t, tmp, "lab", "--n", "2000", "--crash-at", "1199", "--crash", crash); code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			if entries, _ := os.ReadDir(tmp); len(entries) != 0 {
				t.Errorf("without --keep the lab left %v in TMPDIR", entries)
			}
		})
	}
}

// TestBinary_Lab_Data: --data DIR is where the lab's data directory goes
// and it is kept; a directory that already holds anything is refused
// (exit 2) and left exactly as it was.
func TestBinary_Lab_Data(t *testing.T) {
	for _, crash := range []string{"object", "process"} {
		t.Run(crash, func(t *testing.T) {
			base := t.TempDir()
			for _, dir := range []string{filepath.Join(base, "new", "lab"), mkdir(t, filepath.Join(base, "empty"))} {
				tmp := t.TempDir()
				out, errOut, code := labRun(t, tmp, "--data", dir, "lab", "--json", "--n", "2000", "--crash-at", "1199", "--crash", crash, "--durability", "fsync")
				if code != 0 {
					t.Fatalf("--data %s: exit %d: %s", dir, code, errOut)
				}
				r := decodeLab(t, out)
				if r.DataDir != dir || r.Durability != "fsync" || r.Crash != crash || r.Duplicated != 1 {
					t.Errorf("data_dir %q durability %q crash %q duplicated %d; want %s, fsync, %s, 1", r.DataDir, r.Durability, r.Crash, r.Duplicated, dir, crash)
				}
				if entries, _ := os.ReadDir(tmp); len(entries) != 0 {
					t.Errorf("with --data the lab still used TMPDIR: %v", entries)
				}
				out, errOut, code = runBinary(t, t.TempDir(), "", "--data", dir, "topic", "list")
				if code != 0 || !strings.Contains(out, "orders") {
					t.Errorf("topic list on %s: exit %d, %q %q", dir, code, out, errOut)
				}

				// Run again into it: refused, nothing changed.
				before := snapshot(t, dir)
				_, errOut, code = labRun(t, t.TempDir(), "--data", dir, "lab", "--n", "2000", "--crash-at", "1199", "--crash", crash)
				if code != 2 || !strings.Contains(errOut, "is not empty") || !strings.Contains(errOut, "never deletes") {
					t.Errorf("second run into %s: exit %d, stderr %q; want 2 and why", dir, code, errOut)
				}
				if after := snapshot(t, dir); !slices.Equal(before, after) {
					t.Errorf("a refused run changed %s:\nbefore %v\nafter  %v", dir, before, after)
				}
			}
		})
	}

	// Somebody's real data: one file, refused and untouched.
	dir := t.TempDir()
	precious := filepath.Join(dir, "ledger.txt")
	if err := os.WriteFile(precious, []byte("do not touch"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := labRun(t, t.TempDir(), "--data", dir, "lab", "--n", "2000", "--crash-at", "1199")
	if code != 2 || !strings.Contains(errOut, "ledger.txt") {
		t.Errorf("exit %d, stderr %q; want 2 naming what is there", code, errOut)
	}
	if got := snapshot(t, dir); !slices.Equal(got, []string{"ledger.txt 12"}) {
		t.Errorf("the directory now holds %v", got)
	}
}

func mkdir(t *testing.T, dir string) string {
	t.Helper()
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// snapshot lists every file under dir with its size and modification time.
func snapshot(t *testing.T, dir string) []string {
	t.Helper()
	var list []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if d.IsDir() {
			list = append(list, rel+"/")
		} else if rel == "ledger.txt" {
			list = append(list, fmt.Sprintf("%s %d", rel, fi.Size()))
		} else {
			list = append(list, fmt.Sprintf("%s %d %d", rel, fi.Size(), fi.ModTime().UnixNano()))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return list
}

// labTxJSON is the "tx" object of `passbook lab --commit tx --json`.
type labTxJSON struct {
	Tx struct {
		WorkTable    string  `json:"work_table"`
		RowsAtCrash  int     `json:"rows_at_crash"`
		Rows         int     `json:"rows"`
		TxRecords    int     `json:"tx_records"`
		TxMs         float64 `json:"tx_ms"`
		AfterRecords int     `json:"after_records"`
		AfterMs      float64 `json:"after_ms"`
	} `json:"tx"`
}

// TestBinary_Lab_CommitTx: the work and the offset in one transaction,
// crashed both ways at 1,199 of 2,000: every record processed once, 0
// missed, 0 duplicated, in the printed figures and in the work table of
// the kept data directory, read here with SQL; the scoreboard says why
// and shows the two rates it measured.
func TestBinary_Lab_CommitTx(t *testing.T) {
	for _, crash := range []string{"object", "process"} {
		t.Run(crash, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "lab")
			out, errOut, code := labRun(t, t.TempDir(), "--data", dir, "lab", "--json", "--n", "2000", "--crash-at", "1199",
				"--crash", crash, "--commit", "tx", "--predict", "1999,1,0,2000")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			r := decodeLab(t, out)
			if r.Commit != "tx" || r.Crash != crash || r.CrashedAt != 1199 || r.ProcessedBefore != 1200 || r.CommittedAtCrash != 1199 ||
				r.ResumedFrom != 1199 || r.ProcessedAfter != 801 || r.TotalProcessed != 2000 || r.Missed != 0 || r.Duplicated != 0 ||
				len(r.MissedOffsets) != 0 || len(r.DuplicateOffsets) != 0 || r.BReplayed != 2000 || r.AOffsetAfter != 2000 {
				t.Errorf("figures %+v", r)
			}
			if want := [4]string{"spot on", "too high", "spot on", "spot on"}; r.Verdicts != want || !strings.Contains(r.VerdictNotes[1], "commit-after's answer") {
				t.Errorf("verdicts %q notes %q, want %q and P2 named as commit-after's answer", r.Verdicts, r.VerdictNotes, want)
			}
			var tx labTxJSON
			if err := json.Unmarshal([]byte(out), &tx); err != nil {
				t.Fatal(err)
			}
			wantTimed := 2001 // both drains ran in the lab's process
			if crash == "process" {
				wantTimed = 801 // the child's run is not timed
			}
			if f := tx.Tx; f.WorkTable != "lab_work" || f.RowsAtCrash != 1199 || f.Rows != 2000 || f.TxRecords != wantTimed ||
				f.AfterRecords != 2000 || f.TxMs <= 0 || f.AfterMs <= 0 {
				t.Errorf("tx figures %+v, want 1,199 rows at the crash, 2,000 at the end, %d timed", f, wantTimed)
			}

			// The table itself: each offset once, and the row holds the record.
			db, err := passbook.Open(dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			var rows, distinct, lo, hi int
			var v1199 string
			q := db.Offsets().DB().QueryRow(`SELECT COUNT(*), COUNT(DISTINCT record_offset), MIN(record_offset), MAX(record_offset),
				(SELECT value FROM lab_work WHERE record_offset = 1199) FROM lab_work WHERE consumer = 'orders-writer'`)
			err = q.Scan(&rows, &distinct, &lo, &hi, &v1199)
			if cerr := db.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				t.Fatal(err)
			}
			if rows != 2000 || distinct != 2000 || lo != 0 || hi != 1999 || v1199 != "order #1199" {
				t.Errorf("lab_work: %d rows, %d offsets from %d to %d, offset 1199 = %q; want 2,000 once each and order #1199", rows, distinct, lo, hi, v1199)
			}
		})
	}
}

// TestBinary_Lab_CommitTxText: the text run says what happened in the
// transaction and what it cost, with the two rates.
func TestBinary_Lab_CommitTxText(t *testing.T) {
	out, errOut, code := labRun(t, t.TempDir(), "lab", "--n", "2000", "--crash-at", "1199", "--commit", "tx", "--crash", "process", "--predict", "1999,0,1,2000")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	flat := strings.Join(strings.Fields(out), " ")
	for _, want := range []string{
		"crashed inside the transaction: offset 1,199 (its work written, not committed)",
		"handler runs before the crash: 1,200",
		"work rows it left committed: 1,199 (table lab_work)",
		"total records processed: 2,000 (= N, counted from the work table's 2,000 records)",
		"records MISSED (processed 0x): 0",
		"records DUPLICATED (2x): 0",
		"killed with SIGKILL",
		"It wrote the row for offset 1,199 and died before that transaction committed",
		"P3 records missed after crash you = 1 actual = 0 too high that is commit-before's answer",
		"Why there is a third answer, and what it costs:",
		"committing after (after-pass, 2,000 records):",
		"in one transaction (the resumed consumer, 801 records):",
		"the transaction's rate is",
		"exactly-once",
	} {
		if !strings.Contains(flat, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestBinary_Lab_BadCommit: an unknown --commit exits 2 naming the three
// orders, and runs nothing.
func TestBinary_Lab_BadCommit(t *testing.T) {
	for _, bad := range []string{"sometimes", "every=10", "none", "TX", ""} {
		tmp := t.TempDir()
		_, errOut, code := labRun(t, tmp, "lab", "--n", "10", "--crash-at", "5", "--commit", bad)
		if code != 2 || !strings.Contains(errOut, "want after, before or tx") {
			t.Errorf("--commit %q: exit %d, stderr %q; want 2 naming after, before and tx", bad, code, errOut)
		}
		if entries, _ := os.ReadDir(tmp); len(entries) != 0 {
			t.Errorf("--commit %q left %v in TMPDIR", bad, entries)
		}
	}
}
