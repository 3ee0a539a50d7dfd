package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/batch"
	"github.com/passbook-log/passbook/internal/thousands"
)

// Every test here runs the built binary on a data directory made with
// the library, and reads what it wrote back with the library after the
// process has exited.

// kcatBytesPerRecord is what kcat's batches of `seq 1 100000` take
// through `passbook serve`, measured (1,304,720 bytes for 100,000
// records; see docs/benchmarks.md). produce must stay within 10% of it.
const kcatBytesPerRecord = 13.05

// produceData makes a data directory holding topic name with cfg.
func produceData(t *testing.T, name string, cfg passbook.TopicConfig) string {
	t.Helper()
	data := filepath.Join(t.TempDir(), "data")
	db, err := passbook.Open(data, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateTopic(name, cfg); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return data
}

// storedBatches is the record count of every stored batch of each
// partition of topic, in order, read from the segment files.
func storedBatches(t *testing.T, data, topic string) (counts [][]int, bytes int64) {
	t.Helper()
	parts, err := filepath.Glob(filepath.Join(data, "topics", topic, "[0-9]*"))
	if err != nil {
		t.Fatal(err)
	}
	counts = make([][]int, len(parts))
	for _, dir := range parts {
		p, err := strconv.Atoi(filepath.Base(dir))
		if err != nil {
			t.Fatal(err)
		}
		logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
		slices.Sort(logs)
		for _, name := range logs {
			b, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			bytes += int64(len(b))
			for len(b) > 0 {
				h, err := batch.ParseHeader(b)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				counts[p] = append(counts[p], int(h.RecordCount))
				b = b[h.Size():]
			}
		}
	}
	return counts, bytes
}

// stored is every record of topic, by partition, in offset order.
func stored(t *testing.T, data, topic string) [][]passbook.Record {
	t.Helper()
	db, err := passbook.Open(data, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tp, err := db.Topic(topic)
	if err != nil {
		t.Fatal(err)
	}
	out := make([][]passbook.Record, tp.Partitions())
	for p := range out {
		for rec, err := range tp.Records(int32(p), 0) {
			if err != nil {
				t.Fatal(err)
			}
			out[p] = append(out[p], rec.Clone())
		}
	}
	return out
}

// values is the values of recs as strings.
func values(recs []passbook.Record) []string {
	vs := make([]string, len(recs))
	for i, r := range recs {
		vs[i] = string(r.Value)
	}
	return vs
}

func seqLines(from, to int) string {
	var b strings.Builder
	for i := from; i <= to; i++ {
		fmt.Fprintln(&b, i)
	}
	return b.String()
}

// TestProduce_Batches: a batch is appended when one partition's share is
// full (--batch-records records or --batch-bytes bytes) or at the end of
// the input. With --linger 1h nothing else cuts a batch, so the stored
// batches are exact whatever the machine's speed.
func TestProduce_Batches(t *testing.T) {
	tests := []struct {
		name       string
		partitions int
		input      string
		file       bool
		args       []string
		want       [][]int // record count of each stored batch, by partition
	}{
		{"a pipe fills batches of 10,000", 1, seqLines(1, 100_000), false, nil,
			[][]int{{10_000, 10_000, 10_000, 10_000, 10_000, 10_000, 10_000, 10_000, 10_000, 10_000}}},
		{"so does --file", 1, seqLines(1, 25_000), true, nil,
			[][]int{{10_000, 10_000, 5_000}}},
		{"fsync mode makes batches of the same size", 1, seqLines(1, 20_000), false,
			[]string{"--durability", "fsync"}, [][]int{{10_000, 10_000}}},
		{"--batch-records", 1, seqLines(1, 20), false, []string{"--batch-records", "7"},
			[][]int{{7, 7, 6}}},
		{"--batch-bytes counts keys and values", 1, strings.Repeat("k:vvv\n", 7), false,
			[]string{"--batch-bytes", "10", "--key-sep", ":"}, [][]int{{2, 2, 2, 1}}},
		{"1,000,000 bytes fill a batch", 1, strings.Repeat(strings.Repeat("v", 100_000)+"\n", 25), false, nil,
			[][]int{{10, 10, 5}}},
		{"one full partition appends the whole batch", 3, seqLines(1, 30_000), false, nil,
			[][]int{{10_000}, {9_999, 1}, {9_999, 1}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data := produceData(t, "t", passbook.TopicConfig{Partitions: tc.partitions})
			args := append([]string{"--data", data, "produce", "t", "--linger", "1h"}, tc.args...)
			stdin := tc.input
			if tc.file {
				name := filepath.Join(t.TempDir(), "in.txt")
				if err := os.WriteFile(name, []byte(tc.input), 0o644); err != nil {
					t.Fatal(err)
				}
				args, stdin = append(args, "--file", name), ""
			}
			_, errOut, code := runBinary(t, t.TempDir(), stdin, args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			got, size := storedBatches(t, data, "t")
			if !slices.EqualFunc(got, tc.want, slices.Equal) {
				t.Fatalf("batches %v, want %v", got, tc.want)
			}
			n, batches := 0, 0
			for _, p := range tc.want {
				batches += len(p)
				for _, c := range p {
					n += c
				}
			}
			want := fmt.Sprintf("produced %s records to t in %d batches in ", thousands.Int(n), batches)
			if !strings.HasPrefix(errOut, want) {
				t.Errorf("stderr %q, want it to start with %q", errOut, want)
			}
			if tc.input == seqLines(1, 100_000) { // the lines kcat was measured with
				per := float64(size) / float64(n)
				t.Logf("%.2f bytes per record on disk (kcat through serve: %.2f)", per, kcatBytesPerRecord)
				if per > kcatBytesPerRecord*1.1 {
					t.Errorf("%.2f bytes per record, more than 10%% over kcat's %.2f", per, kcatBytesPerRecord)
				}
			}
		})
	}
}

// TestProduce_DefaultLingerBatchesAPipe: with the default linger (5ms), a
// pipe that is never quiet still makes big batches. The floor is loose
// on purpose (a batch lasts at least the linger, so only a run of
// seconds could come near it); the figure is logged.
func TestProduce_DefaultLingerBatchesAPipe(t *testing.T) {
	data := produceData(t, "t", passbook.TopicConfig{})
	_, errOut, code := runBinary(t, t.TempDir(), seqLines(1, 100_000), "--data", data, "produce", "t")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	got, _ := storedBatches(t, data, "t")
	per := 100_000 / float64(len(got[0]))
	t.Logf("%d batches, %.0f records per batch: %s", len(got[0]), per, strings.TrimSpace(errOut))
	if per < 100 {
		t.Errorf("%.0f records per batch, want at least 100", per)
	}
}

// TestProduce_PrintOffsets: --print-offsets prints, in input order, the
// offset each line's record got; every printed offset reads back as that
// line, and there is one per line.
func TestProduce_PrintOffsets(t *testing.T) {
	tests := []struct {
		name       string
		partitions int
		args       []string
	}{
		{"one partition, default batching", 1, nil},
		{"three partitions by key, small batches", 3, []string{"--key-sep", ":", "--batch-records", "50"}},
		{"fsync mode", 3, []string{"--key-sep", ":", "--durability", "fsync", "--batch-records", "300"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data := produceData(t, "t", passbook.TopicConfig{Partitions: tc.partitions})
			var in strings.Builder
			const n = 2_000
			for i := range n {
				fmt.Fprintf(&in, "key%d:value-%d\n", i%7, i)
			}
			args := append([]string{"--data", data, "produce", "t", "--print-offsets"}, tc.args...)
			out, errOut, code := runBinary(t, t.TempDir(), in.String(), args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			printed := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			if len(printed) != n {
				t.Fatalf("%d offsets printed, want %d", len(printed), n)
			}
			recs := stored(t, data, "t")
			total := 0
			for _, p := range recs {
				total += len(p)
			}
			if total != n {
				t.Fatalf("%d records stored, want %d", total, n)
			}
			next := make([]int64, tc.partitions) // offsets printed in order, per partition
			for i, s := range printed {
				part, off := int64(0), int64(-1)
				if tc.partitions == 1 {
					off, _ = strconv.ParseInt(s, 10, 64)
				} else {
					fmt.Sscanf(s, "%d:%d", &part, &off)
				}
				if off != next[part] {
					t.Fatalf("line %d: printed %q, want offset %d of partition %d next", i+1, s, next[part], part)
				}
				next[part]++
				rec := recs[part][off]
				want := fmt.Sprintf("key%d:value-%d", i%7, i)
				if tc.partitions > 1 {
					want = fmt.Sprintf("value-%d", i)
				}
				if string(rec.Value) != want {
					t.Fatalf("line %d: offset %s holds %q, want %q", i+1, s, rec.Value, want)
				}
			}
		})
	}
}

// startProduce starts the binary reading from a pipe the test writes, as
// a person typing, and returns the pipe and the printed offsets.
func startProduce(t *testing.T, args ...string) (*exec.Cmd, io.WriteCloser, *bufio.Reader, *strings.Builder) {
	t.Helper()
	cmd := exec.Command(passbookBinary(t), args...)
	cmd.Dir = t.TempDir()
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	errOut := &strings.Builder{}
	cmd.Stderr = errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill() // by pid; a no-op once it has exited
		cmd.Wait()
	})
	return cmd, in, bufio.NewReader(out), errOut
}

// TestProduce_Interactive: a line typed into an open pipe is acknowledged
// and its offset printed without waiting for more input (within the
// linger); an offset printed is an acknowledged record, which a kill -9
// right after does not take away.
func TestProduce_Interactive(t *testing.T) {
	data := produceData(t, "t", passbook.TopicConfig{})
	cmd, in, out, errOut := startProduce(t, "--data", data, "produce", "t", "--print-offsets")
	for i := range 3 {
		fmt.Fprintf(in, "typed-%d\n", i)
		got, err := out.ReadString('\n')
		if err != nil {
			t.Fatalf("line %d: no offset printed (%v); stderr %q", i+1, err, errOut)
		}
		if got != fmt.Sprintf("%d\n", i) {
			t.Fatalf("line %d: printed %q, want %d", i+1, got, i)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	recs := stored(t, data, "t")
	if got, want := values(recs[0]), []string{"typed-0", "typed-1", "typed-2"}; !slices.Equal(got, want) {
		t.Fatalf("after kill -9: %q, want %q", got, want)
	}
}

// TestProduce_Interrupted: Ctrl-C appends the lines read and says where
// to go on; the exit status is 128 + SIGINT.
func TestProduce_Interrupted(t *testing.T) {
	data := produceData(t, "t", passbook.TopicConfig{})
	cmd, in, out, errOut := startProduce(t, "--data", data, "produce", "t", "--print-offsets")
	for i := range 3 {
		fmt.Fprintf(in, "typed-%d\n", i)
		if _, err := out.ReadString('\n'); err != nil {
			t.Fatal(err)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 130 {
		t.Errorf("exit %d (%v), want 130", code, err)
	}
	for _, want := range []string{
		"interrupted at line 4",
		"written and acknowledged: 3 records, lines 1–3 (offsets 0–2)",
		"not written: line 4 and everything after it",
		"… | tail -n +4 | passbook produce t --data " + data + " --print-offsets",
	} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("stderr %q\nwant %q", errOut, want)
		}
	}
	if got := values(stored(t, data, "t")[0]); len(got) != 3 {
		t.Fatalf("stored %q, want the 3 lines", got)
	}
}

var skipCommand = regexp.MustCompile(`(?m)^  or skip line \d+: +(.*)$`)

// TestProduce_RefusedLine: a line that cannot be a record stops the run
// at that line, always the same way: every line before it is appended and
// acknowledged, none after it; exit 2; the error says how many records,
// their offsets, and the command to go on, which works.
func TestProduce_RefusedLine(t *testing.T) {
	lines := func(n int) []string {
		var ls []string
		for i := 1; i <= n; i++ {
			ls = append(ls, fmt.Sprintf("k%d:line-%d", i%5, i))
		}
		return ls
	}
	long := strings.Repeat("x", 40)
	tests := []struct {
		name    string
		cfg     passbook.TopicConfig
		input   []string
		refused int // the line
		args    []string
		reason  string
		offsets string // what the error says was written
	}{
		{"too long, first line", passbook.TopicConfig{}, append([]string{long}, lines(3)...), 1,
			[]string{"--max-line", "20"}, "longer than --max-line 20 bytes", "nothing"},
		{"too long, second line", passbook.TopicConfig{}, slices.Insert(lines(3), 1, long), 2,
			[]string{"--max-line", "20"}, "longer than --max-line 20 bytes", "1 record, line 1 (offset 0)"},
		{"too long, after two full batches", passbook.TopicConfig{}, slices.Insert(lines(12), 7, long), 8,
			[]string{"--max-line", "20", "--batch-records", "3", "--linger", "1h"}, "longer than --max-line 20 bytes",
			"7 records, lines 1–7 (offsets 0–6)"},
		{"too long, last line without a newline", passbook.TopicConfig{}, append(lines(4), long), 5,
			[]string{"--max-line", "20"}, "longer than --max-line 20 bytes", "4 records, lines 1–4 (offsets 0–3)"},
		{"over the topic's max message bytes", passbook.TopicConfig{MaxRecordBytes: 12}, slices.Insert(lines(6), 4, "k:"+long), 5,
			[]string{"--key-sep", ":"}, "storage: record too large: 41 bytes of key and value, over the topic's max message bytes 12",
			"4 records, lines 1–4 (offsets 0–3)"},
		{"no key on a compacted topic", passbook.TopicConfig{CleanupPolicy: passbook.CleanupCompact}, slices.Insert(lines(6), 3, "keyless"), 4,
			[]string{"--key-sep", ":"}, `storage: record without a key on a compacted log (the line has no ":")`,
			"3 records, lines 1–3 (offsets 0–2)"},
		{"three partitions", passbook.TopicConfig{Partitions: 3}, slices.Insert(lines(9), 5, long), 6,
			[]string{"--max-line", "20"}, "longer than --max-line 20 bytes",
			"5 records, lines 1–5 (partition 0: offsets 0–1; partition 1: offsets 0–1; partition 2: offset 0)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data := produceData(t, "t", tc.cfg)
			input := strings.Join(tc.input, "\n")
			if !strings.Contains(tc.name, "without a newline") {
				input += "\n"
			}
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "in.txt"), []byte(input), 0o644); err != nil {
				t.Fatal(err)
			}
			args := append([]string{"--data", data, "produce", "t"}, tc.args...)
			_, errOut, code := runBinary(t, dir, input, args...)
			if code != 2 {
				t.Fatalf("exit %d, want 2: %s", code, errOut)
			}
			L := tc.refused
			for _, want := range []string{
				fmt.Sprintf("error: line %d refused: %s\n", L, tc.reason),
				"written and acknowledged: " + tc.offsets + "\n",
				fmt.Sprintf("not written: line %d and everything after it\n", L),
				fmt.Sprintf("resume at line %d: … | tail -n +%d | passbook produce t", L, L),
				fmt.Sprintf("| tail -n +%d | passbook produce t", L+1),
			} {
				if !strings.Contains(errOut, want) {
					t.Errorf("stderr %q\nwant %q", errOut, want)
				}
			}
			// Exactly the lines before the refused one are stored. Each
			// run spreads its keyless lines round robin from partition 0.
			want := make([][]string, max(1, tc.cfg.Partitions))
			check := func(lines []string) {
				t.Helper()
				for i, l := range lines {
					if slices.Contains(tc.args, "--key-sep") {
						_, l, _ = strings.Cut(l, ":")
					}
					want[i%len(want)] = append(want[i%len(want)], l)
				}
				for p, recs := range stored(t, data, "t") {
					if got := values(recs); !slices.Equal(got, want[p]) {
						t.Fatalf("partition %d holds %q, want %q", p, got, want[p])
					}
				}
			}
			check(tc.input[:L-1])
			// The printed command that skips the line appends the rest.
			m := skipCommand.FindStringSubmatch(errOut)
			if m == nil {
				t.Fatalf("no skip command in %q", errOut)
			}
			sh := strings.Replace(m[1], "…", "cat in.txt", 1)
			sh = strings.Replace(sh, "passbook produce", passbookBinary(t)+" produce", 1)
			c := exec.Command("sh", "-c", sh)
			c.Dir = dir
			if out, err := c.CombinedOutput(); err != nil {
				t.Fatalf("%s: %v\n%s", sh, err, out)
			}
			check(tc.input[L:])
		})
	}
}

// TestProduce_LineEndings: what a line is. \n ends a line and a \r just
// before it goes too (CRLF files give the same records); another \r is
// data; an empty line is an empty record; a last line without a newline
// is a record (a \r at its end dropped too); no input is no record.
func TestProduce_LineEndings(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  []string
	}{
		{"LF", "a\nb\n", []string{"a", "b"}},
		{"CRLF", "a\r\nb\r\n", []string{"a", "b"}},
		{"a \\r inside a line is data", "a\rb\nc\r\r\n", []string{"a\rb", "c\r"}},
		{"empty lines are empty records", "a\n\n\r\nb\n", []string{"a", "", "", "b"}},
		{"last line without a newline", "a\nlast", []string{"a", "last"}},
		{"last line ending in \\r", "a\nlast\r", []string{"a", "last"}},
		{"no input", "", nil},
		{"one empty line", "\n", []string{""}},
	}
	for _, tc := range tests {
		for _, file := range []bool{false, true} {
			name := tc.name + "/stdin"
			if file {
				name = tc.name + "/file"
			}
			t.Run(name, func(t *testing.T) {
				data := produceData(t, "t", passbook.TopicConfig{})
				args, stdin := []string{"--data", data, "produce", "t", "--print-offsets"}, tc.input
				if file {
					f := filepath.Join(t.TempDir(), "in.txt")
					if err := os.WriteFile(f, []byte(tc.input), 0o644); err != nil {
						t.Fatal(err)
					}
					args, stdin = append(args, "--file", f), ""
				}
				out, errOut, code := runBinary(t, t.TempDir(), stdin, args...)
				if code != 0 {
					t.Fatalf("exit %d: %s", code, errOut)
				}
				got := values(stored(t, data, "t")[0])
				if !slices.Equal(got, tc.want) && len(got)+len(tc.want) > 0 {
					t.Fatalf("stored %q, want %q", got, tc.want)
				}
				if n := strings.Count(out, "\n"); n != len(tc.want) {
					t.Fatalf("%d offsets printed, want %d", n, len(tc.want))
				}
			})
		}
	}
}

// TestProduce_BadFlags: bad batching flags are bad input (exit 2), and
// nothing is written.
func TestProduce_BadFlags(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--linger", "-1ms"}, "--linger -1ms: want 0 or more"},
		{[]string{"--batch-records", "0"}, "--batch-records 0: want 1 to 1,000,000"},
		{[]string{"--batch-records", "2000000"}, "--batch-records 2,000,000: want 1 to 1,000,000"},
		{[]string{"--batch-bytes", "0"}, "--batch-bytes 0: want 1 to 16,777,216"},
		{[]string{"--max-line", "0"}, "--max-line 0: want at least 1 byte"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			data := produceData(t, "t", passbook.TopicConfig{})
			args := append([]string{"--data", data, "produce", "t"}, tc.args...)
			_, errOut, code := runBinary(t, t.TempDir(), "a\nb\n", args...)
			if code != 2 || !strings.Contains(errOut, tc.want) {
				t.Fatalf("exit %d, stderr %q; want exit 2 with %q", code, errOut, tc.want)
			}
			if got := stored(t, data, "t")[0]; len(got) != 0 {
				t.Fatalf("%d records written", len(got))
			}
		})
	}
}

// TestProduce_AppendFailsInOnePartition: when the append of one
// partition's share of a batch fails (here its log is closed under it),
// the partitions appended before it stay acknowledged and their offsets
// printed, and the error says which later lines were acknowledged, so
// that resuming does not surprise anyone. In-process: a failing disk
// cannot be arranged for a child process.
func TestProduce_AppendFailsInOnePartition(t *testing.T) {
	db, err := passbook.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tp, err := db.CreateTopic("t", passbook.TopicConfig{Partitions: 2})
	if err != nil {
		t.Fatal(err)
	}
	l1, _ := tp.Partition(1)
	l1.Close()
	p, err := newProducer(topicSink{tp, 0}, limits{records: 100, bytes: 1 << 20, linger: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	p.out, p.maxLine, p.resume = bufio.NewWriter(&out), 100, "… | tail -n +LINE | passbook produce t"
	err = p.run(context.Background(), strings.NewReader("a\nb\nc\nd\ne\nf\n"), &progress{})
	if err == nil || exitCode(err) != 1 {
		t.Fatalf("err %v (exit %d), want an exit-1 error", err, exitCode(err))
	}
	for _, want := range []string{
		"topic t partition 1: storage: log closed\n",
		"written and acknowledged: 3 records (partition 0: offsets 0–2)",
		"not acknowledged: line 2 and the lines after it, except 2 later lines acknowledged in other partitions (resuming at line 2 writes those 2 again)",
		"resume at line 2: … | tail -n +2 | passbook produce t",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q\nwant %q", err, want)
		}
	}
	if got := out.String(); got != "0:0\n0:1\n0:2\n" {
		t.Errorf("printed %q, want partition 0's three offsets", got)
	}
}
