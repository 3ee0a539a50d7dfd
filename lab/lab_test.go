package lab_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/passbook-log/passbook/consumer"
	"github.com/passbook-log/passbook/lab"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// TestMain lets this test binary be the consumer process of CrashProcess.
func TestMain(m *testing.M) {
	if os.Getenv("PASSBOOK_LAB_CHILD") != "" {
		flag.Parse()
		if err := lab.ChildMain(context.Background(), flag.Args(), os.Stdout); err != nil {
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
	for _, commit := range []consumer.Commit{consumer.CommitAfter, consumer.CommitBefore} {
		for _, crash := range []lab.Crash{lab.CrashObject, lab.CrashProcess} {
			name := commit.String() + "-" + string(crash)
			t.Run(name, func(t *testing.T) {
				o := lab.Options{N: 10_000, CrashAt: 5_999, Commit: commit, Crash: crash,
					Predictions: [4]*int64{int64p(9_999), int64p(1), nil, int64p(7_000)},
					Child:       []string{os.Args[0], "--"}}
				r, err := lab.Run(context.Background(), o)
				if err != nil {
					t.Fatal(err)
				}
				r.AppendMs, r.PartMs = 0, [3]float64{}
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

func TestRun_BadOptions(t *testing.T) {
	for _, o := range []lab.Options{
		{N: -1}, {N: 10, CrashAt: 10}, {CrashAt: -5}, {Crash: "meteor"}, {Commit: consumer.CommitEvery},
	} {
		if _, err := lab.Run(context.Background(), o); !errors.Is(err, lab.ErrOptions) {
			t.Errorf("Run(%+v) = %v, want ErrOptions", o, err)
		}
	}
}

func TestJudge(t *testing.T) {
	for _, tc := range []struct {
		predicted *int64
		actual    int64
		want      string
	}{
		{nil, 5, lab.NoPrediction},
		{int64p(1), 1, lab.SpotOn},
		{int64p(0), 0, lab.SpotOn},
		{int64p(100), 60, lab.CloseEnough},
		{int64p(100), 170, lab.CloseEnough},
		{int64p(100), 59, lab.TooHigh},
		{int64p(100), 171, lab.TooLow},
		{int64p(0), 1, lab.TooLow},
		{int64p(2), 0, lab.TooHigh},
	} {
		if got := lab.Judge(tc.predicted, tc.actual); got != tc.want {
			t.Errorf("Judge(%v, %d) = %q, want %q", tc.predicted, tc.actual, got, tc.want)
		}
	}
}
