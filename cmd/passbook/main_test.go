package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// runCLI runs the CLI in-process with the given stdin and returns its
// stdout, stderr and exit code.
func runCLI(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := run(context.Background(), args, strings.NewReader(stdin), &out, &errOut)
	code := 0
	if err != nil {
		fmt.Fprintln(&errOut, "error:", err)
		code = exitCode(err)
	}
	return out.String(), errOut.String(), code
}

var timestamps = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z`)

// TestCLI_Golden runs a session of commands on one data directory and
// compares what each prints with testdata/session.golden.
func TestCLI_Golden(t *testing.T) {
	data := t.TempDir()
	lines := make([]string, 0, 100)
	for i := range 100 {
		lines = append(lines, fmt.Sprintf("order-%03d", i))
	}
	orders := strings.Join(lines, "\n") + "\n"
	steps := []struct {
		stdin string
		args  string
	}{
		{"", "topic create orders"},
		{"", "topic create users --partitions 3 --retention 168h"},
		{"", "topic create ../etc"},
		{"", "topic create orders"},
		{orders, "produce orders --print-offsets"},
		{"alice:1\nbob:2\ncarol:3\nalice:4\n", "produce users --key-sep : --print-offsets"},
		{"", "topic list"},
		{"", "topic describe orders"},
		{"", "consume orders --consumer orders-writer --max 3"},
		{"", "consume orders --consumer orders-writer --max 2"},
		{"", "consume orders --consumer analytics-v2 --from 98 --format json"},
		{"", "consume users --consumer u --format json"},
		{"", "lag"},
		{"", "replay orders --consumer orders-writer --to earliest"},
		{"", "replay orders --consumer orders-writer --to 1000"},
		{"", "offsets set 42 --consumer orders-writer --topic orders"},
		{"", "offsets set -3 --consumer orders-writer --topic orders"},
		{"", "offsets list --topic orders"},
		{"", "offsets list --topic orders --json"},
		{"", "lag --consumer ghost"},
		{"", "replay orders --consumer typo --to earliest"},
		{"", "lag --consumer orders-writer --json"},
		{"", "offsets delete --consumer analytics-v2"},
		{"", "consume orders --consumer x --commit sometimes"},
		{"", "consume orders --consumer x --from yesterday"},
		{"", "consume nope --consumer x"},
		{"", "consume orders"},
		{"", "topic delete users"},
		{"", "topic list"},
		{"", "topic craete prices"},
		{"", "topic create prices --cleanup-policy compact --segment-bytes 100"},
		{"", "topic create prices --cleanup-policy compact --internal-segment-bytes 100"},
		{"apple:1\npear:1\n", "produce prices --key-sep :"},
		{"apple:2\n", "produce prices --key-sep :"},
		{"pear:2\nplum:1\n", "produce prices --key-sep :"},
		{"apple:3\n", "produce prices --key-sep :"},
		{"", "topic compact prices"},
		{"", "consume prices --consumer c --format json"},
		{"kiwi\n", "produce prices"},
		{"", "topic compact orders"},
		{"", "topic describe prices"},
		{"", "topic alter orders --partitions 3"},
		{"", "topic alter orders --partitions 2"},
		{"", "topic trim orders --partition 0 --before 60"},
		{"", "topic trim orders --partition 0 --before 500"},
		{"", "topic trim prices --partition 0 --before 1"},
		{"", "topic describe orders"},
		{"", "consume orders --consumer late --max 2"},
	}
	var got strings.Builder
	for _, s := range steps {
		args := append([]string{"--data", data}, strings.Fields(s.args)...)
		out, errOut, code := runCLI(t, s.stdin, args...)
		fmt.Fprintf(&got, "$ passbook %s\n%s", s.args, out)
		if code != 0 {
			fmt.Fprintf(&got, "[exit %d] %s", code, strings.ReplaceAll(errOut, data, "DATA"))
		}
	}
	text := timestamps.ReplaceAllString(got.String(), "TIME")
	golden := filepath.Join("testdata", "session.golden")
	if *update {
		os.WriteFile(golden, []byte(text), 0o644)
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if text != string(want) {
		t.Errorf("output differs from %s (run with -update to see):\n%s", golden, text)
	}
}

func TestCLI_LockedDataDirectory(t *testing.T) {
	data := t.TempDir()
	e := &env{data: data, stderr: &bytes.Buffer{}}
	db, err := e.create()
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_, errOut, code := runCLI(t, "", "--data", data, "topic", "list")
	if code != 1 || !strings.Contains(errOut, "is in use by process") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
}

func TestLab_BadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"lab", "--crash-at", "100000"},
		{"lab", "--n", "0"},
		{"lab", "--predict", "1,2,3"},
		{"lab", "--predict", "a,b,c,d"},
		{"lab", "--commit", "sometimes"},
		{"lab", "--crash", "meteor"},
		{"lab", "--n", "ten"},
		{"lab", "extra"},
	} {
		_, errOut, code := runCLI(t, "", args...)
		if code != 2 {
			t.Errorf("%v: exit %d, want 2 (stderr %q)", args, code, errOut)
		}
	}
}

func TestLab_JSON(t *testing.T) {
	out, errOut, code := runCLI(t, "", "lab", "--n", "1000", "--crash-at", "599", "--json", "--predict", "999,1,0,")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{`"total_processed": 1001`, `"duplicate_offsets": [` + "\n    599", `"verdicts": [` + "\n    \"spot on\",\n    \"spot on\",\n    \"spot on\",\n    \"no prediction\""} {
		if !strings.Contains(out, want) {
			t.Errorf("lab --json lacks %q:\n%s", want, out)
		}
	}
}
