package lab_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/lab"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// TestMain lets this test binary be the consumer process of CrashProcess.
func TestMain(m *testing.M) {
	if spec := os.Getenv(lab.ChildEnv); spec != "" {
		if err := lab.ChildMain(context.Background(), spec, os.Stdout); err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func int64p(v int64) *int64 { return &v }

// TestRun_Golden checks every figure of --json (all but the timings)
// against golden files, for each commit mode and crash kind.
func TestRun_Golden(t *testing.T) {
	for _, commit := range lab.Commits {
		for _, crash := range []lab.Crash{lab.CrashObject, lab.CrashProcess} {
			name := string(commit) + "-" + string(crash)
			t.Run(name, func(t *testing.T) {
				n, crashAt := 10_000, int64(5_999)
				if commit == lab.CommitTx {
					n, crashAt = 2_000, 1_199 // a transaction per record: slow under -race
				}
				o := lab.Options{N: n, CrashAt: crashAt, Commit: commit, Crash: crash,
					Predictions: [4]*int64{int64p(9_999), int64p(1), nil, int64p(7_000)},
					Child:       []string{os.Args[0], "--"}}
				r, err := lab.Run(context.Background(), o)
				if err != nil {
					t.Fatal(err)
				}
				r.AppendMs, r.PartMs = 0, [3]float64{}
				if r.Tx != nil {
					r.Tx.TxMs, r.Tx.AfterMs = 0, 0
				}
				got, _ := json.MarshalIndent(r, "", "  ")
				got = append(got, '\n')
				golden := filepath.Join("testdata", name+".json")
				if *update {
					os.WriteFile(golden, got, 0o644)
				}
				want, err := os.ReadFile(golden)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Errorf("figures differ from %s:\n%s", golden, got)
				}
			})
		}
	}
}

// TestRun_Default is the course's run: 100,000 records, crash at 59,999.
func TestRun_Default(t *testing.T) {
	r, err := lab.Run(context.Background(), lab.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.LastOffset != 99_999 || r.TotalProcessed != 100_001 || r.Missed != 0 || r.Duplicated != 1 ||
		r.DuplicateOffsets[0] != 59_999 || r.CommittedAtCrash != 59_999 || r.ResumedFrom != 59_999 ||
		r.ProcessedBeforeCrash != 60_000 || r.ProcessedAfterRestart != 40_001 ||
		r.BReplayed != 100_000 || !r.BInOrder || r.AOffset != 100_000 || r.AOffsetAfter != 100_000 || r.BOffset != 100_000 {
		t.Fatalf("figures: %+v", r)
	}
	var buf bytes.Buffer
	r.WriteText(&buf)
	for _, want := range []string{"total records processed:         100,001 (= N + 1)", "records DUPLICATED (2x):         1 at offset [59999]"} {
		if !bytes.Contains(buf.Bytes(), []byte(want)) {
			t.Errorf("output lacks %q", want)
		}
	}
	t.Logf("parts took %.0f, %.0f, %.0f ms", r.PartMs[0], r.PartMs[1], r.PartMs[2])
}

// TestRun_Tx is Part 2 with the work and the offset in one transaction,
// under both crash kinds: every record's work in the work table once,
// counted by querying the table of the kept data directory. (2,000
// records rather than the course's 100,000: a transaction per record
// under -race; the golden tx files have 10,000, and `passbook lab
// --commit tx` runs the 100,000.)
func TestRun_Tx(t *testing.T) {
	for _, crash := range []lab.Crash{lab.CrashObject, lab.CrashProcess} {
		t.Run(string(crash), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "lab")
			r, err := lab.Run(context.Background(), lab.Options{N: 2_000, CrashAt: 1_199, Commit: lab.CommitTx, Crash: crash, Dir: dir, Child: []string{os.Args[0], "--"}})
			if err != nil {
				t.Fatal(err)
			}
			if r.TotalProcessed != 2_000 || r.Missed != 0 || r.Duplicated != 0 || r.CommittedAtCrash != 1_199 || r.ResumedFrom != 1_199 ||
				r.ProcessedBeforeCrash != 1_200 || r.ProcessedAfterRestart != 801 || r.Tx.RowsAtCrash != 1_199 || r.Tx.Rows != 2_000 ||
				r.BReplayed != 2_000 || r.AOffsetAfter != 2_000 || r.Tx.AfterRecords != 2_000 {
				t.Fatalf("figures: %+v, tx %+v", r, r.Tx)
			}
			wantTx := 2_001 // both drains ran in this process
			if crash == lab.CrashProcess {
				wantTx = 801 // the child's run is not timed
			}
			if r.Tx.TxRecords != wantTx || r.Tx.TxMs <= 0 || r.Tx.AfterMs <= 0 {
				t.Errorf("timed %d tx records in %v ms, %d after in %v ms; want %d tx", r.Tx.TxRecords, r.Tx.TxMs, r.Tx.AfterRecords, r.Tx.AfterMs, wantTx)
			}
			rows, distinct, lo, hi := workTable(t, dir)
			if rows != 2_000 || distinct != 2_000 || lo != 0 || hi != 1_999 {
				t.Errorf("work table: %d rows, %d distinct offsets from %d to %d; want 2,000 once each, 0 to 1,999", rows, distinct, lo, hi)
			}
			t.Logf("tx %.0f records/s, after %.0f records/s", r.Tx.TxRate(), r.Tx.AfterRate())
		})
	}
}

// workTable queries the work table of the lab's data directory dir.
func workTable(t *testing.T, dir string) (rows, distinct int, lo, hi int64) {
	t.Helper()
	db, err := passbook.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Offsets().DB().QueryRow(`SELECT COUNT(*), COUNT(DISTINCT record_offset), MIN(record_offset), MAX(record_offset) FROM `+lab.WorkTable+` WHERE consumer = 'orders-writer'`).
		Scan(&rows, &distinct, &lo, &hi)
	if err != nil {
		t.Fatal(err)
	}
	return rows, distinct, lo, hi
}

func TestRun_BadOptions(t *testing.T) {
	for _, o := range []lab.Options{
		{N: -1}, {N: 10, CrashAt: 10}, {CrashAt: -5}, {Crash: "meteor"}, {Commit: "every"}, {Commit: "sometimes"},
	} {
		if _, err := lab.Run(context.Background(), o); !errors.Is(err, lab.ErrOptions) {
			t.Errorf("Run(%+v) = %v, want ErrOptions", o, err)
		}
	}
}

// TestJudge: exact answers are spot on; the off-by-ones each prediction
// invites are named; the other commit order's answer is named too; other
// answers are too low or too high.
func TestJudge(t *testing.T) {
	after := &lab.Result{N: 100_000, LastOffset: 99_999, CrashedAt: 59_999, Duplicated: 1, Missed: 0, BReplayed: 100_000, Commit: lab.CommitAfter}
	before := &lab.Result{N: 100_000, LastOffset: 99_999, CrashedAt: 59_999, Duplicated: 0, Missed: 1, BReplayed: 100_000, Commit: lab.CommitBefore}
	tx := &lab.Result{N: 100_000, LastOffset: 99_999, CrashedAt: 59_999, Duplicated: 0, Missed: 0, BReplayed: 100_000, Commit: lab.CommitTx}
	for _, tc := range []struct {
		name      string
		r         *lab.Result
		p         int
		predicted *int64
		want      string
		note      string // a substring of the note; "" means no note
	}{
		{"no prediction", after, 1, nil, lab.NoPrediction, ""},
		{"P1 exact", after, 1, int64p(99_999), lab.SpotOn, ""},
		{"P1 the count", after, 1, int64p(100_000), lab.OffByOne, "that is the count; the last offset is count − 1"},
		{"P1 count − 2", after, 1, int64p(99_998), lab.OffByOne, "offsets start at 0"},
		{"P1 far low", after, 1, int64p(60_000), lab.TooLow, ""},
		{"P1 far high", after, 1, int64p(170_000), lab.TooHigh, ""},
		{"P1 a bit high is not close enough", after, 1, int64p(100_002), lab.TooHigh, ""},
		{"P2 after exact", after, 2, int64p(1), lab.SpotOn, ""},
		{"P2 after, committed the processed offset", after, 2, int64p(2), lab.OffByOne, "commits the offset it processed instead of the next one to read"},
		{"P2 after, the commit-before answer", after, 2, int64p(0), lab.TooLow, "commit-before's answer"},
		{"P2 after, far high", after, 2, int64p(5), lab.TooHigh, ""},
		{"P2 before exact", before, 2, int64p(0), lab.SpotOn, ""},
		{"P2 before, the commit-after answer", before, 2, int64p(1), lab.TooHigh, "commit-after's answer"},
		{"P3 after exact", after, 3, int64p(0), lab.SpotOn, ""},
		{"P3 after, the commit-before answer", after, 3, int64p(1), lab.TooHigh, "commit-before's answer"},
		{"P3 before exact", before, 3, int64p(1), lab.SpotOn, ""},
		{"P3 before, the commit-after answer", before, 3, int64p(0), lab.TooLow, "commit-after's answer"},
		{"P3 before, far high", before, 3, int64p(7), lab.TooHigh, ""},
		{"P2 tx exact", tx, 2, int64p(0), lab.SpotOn, ""},
		{"P2 tx, the commit-after answer", tx, 2, int64p(1), lab.TooHigh, "rolled back with its offset"},
		{"P2 tx, far high", tx, 2, int64p(3), lab.TooHigh, ""},
		{"P3 tx exact", tx, 3, int64p(0), lab.SpotOn, ""},
		{"P3 tx, the commit-before answer", tx, 3, int64p(1), lab.TooHigh, "commit-before's answer"},
		{"P4 exact", after, 4, int64p(100_000), lab.SpotOn, ""},
		{"P4 the last offset", after, 4, int64p(99_999), lab.OffByOne, "that is the last offset; offsets 0 to 99,999 are 100,000 records"},
		{"P4 counting A's duplicate", after, 4, int64p(100_001), lab.OffByOne, "the record that ran twice ran on A's"},
		{"P4 only what A had left", after, 4, int64p(40_001), lab.TooLow, ""},
		{"P4 zero", before, 4, int64p(0), lab.TooLow, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := lab.Judge(tc.p, tc.predicted, tc.r)
			if v.Word != tc.want || (tc.note == "") != (v.Note == "") || !strings.Contains(v.Note, tc.note) {
				t.Errorf("Judge(P%d, %v) = %q, want %q with a note containing %q", tc.p, deref(tc.predicted), v, tc.want, tc.note)
			}
		})
	}
}

func deref(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}
