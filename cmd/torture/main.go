// Command torture runs passbook through trials of a workload — producers
// and consumers, embedded and over the Kafka protocol — injecting one
// fault per trial, and checks what survives:
//
//   - kill9: SIGKILL of the process at a random moment (the embedded
//     workload in a child process; `passbook serve` under franz-go
//     producers with acks=all and a consumer group);
//   - powerloss: a simulated power cut (vfs.MemFS.Crash, tearing unsynced
//     tails) under the embedded workload and under an in-process Kafka
//     server;
//   - bitflip: a random byte flipped in a closed segment, an index, a time
//     index or the offset database of a closed data directory;
//   - diskerror: the disk failing the i-th write or fsync (vfs.FaultyFS),
//     embedded and under Kafka.
//
// After each fault it reopens the data and checks that every acknowledged
// record is at its acknowledged offset with its exact bytes, offsets are
// dense, nothing was invented, no damaged record was returned as data,
// committed offsets never run ahead of what was processed, duplicates
// stay within each delivery mode's in-flight window, and passbook verify
// finds the directory clean (or, after a bit flip, reports the damage).
// It prints one summary line per fault kind and a total:
//
//	trials N, faults F, acknowledged A, lost 0, corrupt-returned 0, invented 0, duplicates-beyond-window 0
//
// and exits 1 if any promise was broken. Usage:
//
//	go run ./cmd/torture -trials 1000 -seed 42
//	go run ./cmd/torture -duration 2m -kinds kill9,powerloss
//
// With -soak first it runs the soak instead (scripts/soak.sh): producers
// and consumers at half the sustained rate against `passbook serve` for
// ten minutes, printing the server's memory, goroutines, open files and
// the latencies every 10 s, and checking that they stay flat:
//
//	go run ./cmd/torture -soak -duration 10m
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/passbook-log/passbook/internal/thousands"
)

func main() {
	if childMain() {
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "torture:", err)
		os.Exit(1)
	}
}

// kind is one kind of trial.
type kind struct {
	name  string // fault/workload
	fault string // the fault kind it counts under
	run   func(*env) tally
}

var kinds = []kind{
	{"kill9/embedded", "kill9", (*env).kill9Embedded},
	{"kill9/kafka", "kill9", (*env).kill9Kafka},
	{"powerloss/embedded", "powerloss", (*env).powerLossEmbedded},
	{"powerloss/kafka", "powerloss", (*env).powerLossKafka},
	{"bitflip", "bitflip", nil}, // per target, below
	{"diskerror/embedded", "diskerror", (*env).diskErrorEmbedded},
	{"diskerror/kafka", "diskerror", (*env).diskErrorKafka},
}

// result is what a run found, per trial kind and fault kind.
type result struct {
	byKind  map[string]*tally
	byFault map[string]*tally
	total   tally
}

// run is the whole program.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "-soak" {
		return soak(ctx, args[1:], stdout, stderr)
	}
	r, err := torture(ctx, args, stdout, stderr)
	if err != nil {
		return err
	}
	if v := r.total.violations(); v > 0 {
		return fmt.Errorf("%d broken promises (see above)", v)
	}
	return nil
}

func torture(ctx context.Context, args []string, stdout, stderr io.Writer) (*result, error) {
	fs := flag.NewFlagSet("torture", flag.ContinueOnError)
	fs.SetOutput(stderr)
	trials := fs.Int("trials", 0, "trials of each fault kind (0: as many as -duration allows)")
	duration := fs.Duration("duration", 0, "stop starting trials after this long (0: no limit; with -trials 0, 2m)")
	seed := fs.Uint64("seed", 0, "random seed (0: from the clock); printed, to rerun a run")
	only := fs.String("kinds", "kill9,powerloss,bitflip,diskerror", "fault kinds to run, comma-separated, or trial kinds such as kill9/kafka")
	bin := fs.String("passbook", "", "the passbook binary to run `passbook serve` (default: go build it)")
	tmp := fs.String("tmp", "", "directory for the trials' data (default: a new temporary directory)")
	verbose := fs.Bool("v", false, "print a line per trial")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *seed == 0 {
		*seed = uint64(time.Now().UnixNano())
	}
	if *trials == 0 && *duration == 0 {
		*duration = 2 * time.Minute
	}
	var selected []kind
	for _, k := range kinds {
		for _, want := range strings.Split(*only, ",") {
			if want == k.fault || want == k.name {
				selected = append(selected, k)
			}
		}
	}
	if len(selected) == 0 {
		return nil, fmt.Errorf("no trial kind matches -kinds %q", *only)
	}
	fmt.Fprintf(stdout, "seed %d (rerun with -seed %d)\n", *seed, *seed)
	base := *tmp
	if base == "" {
		d, err := os.MkdirTemp("", "passbook-torture-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(d)
		base = d
	}
	e := &env{rng: rand.New(rand.NewPCG(*seed, 0x7047)), tmp: base, passbook: *bin, log: stderr}
	if e.passbook == "" && slices.ContainsFunc(selected, func(k kind) bool { return k.name == "kill9/kafka" }) {
		path, err := buildPassbook(base)
		if err != nil {
			return nil, err
		}
		e.passbook = path
	}
	r := &result{byKind: map[string]*tally{}, byFault: map[string]*tally{}}
	counts := map[string]int{} // trials per fault kind
	began := time.Now()
	for i := 0; ctx.Err() == nil; i++ {
		if *duration > 0 && time.Since(began) > *duration {
			break
		}
		if *trials > 0 && allDone(selected, counts, *trials) {
			break
		}
		k := selected[i%len(selected)]
		if *trials > 0 && counts[k.fault] >= *trials {
			continue
		}
		name := k.name
		var t tally
		if k.run == nil {
			var target string
			t, target = e.bitFlip()
			name = "bitflip/" + target
		} else {
			t = k.run(e)
		}
		counts[k.fault]++
		if r.byKind[name] == nil {
			r.byKind[name] = &tally{}
		}
		r.byKind[name].add(t)
		if r.byFault[k.fault] == nil {
			r.byFault[k.fault] = &tally{}
		}
		r.byFault[k.fault].add(t)
		r.total.add(t)
		if *verbose || t.violations() > 0 {
			fmt.Fprintf(stderr, "trial %d %s: %s\n", e.n, name, line(&t))
			for _, n := range t.notes {
				fmt.Fprintf(stderr, "  %s\n", n)
			}
		}
	}
	report(stdout, r, time.Since(began))
	return r, nil
}

func allDone(ks []kind, counts map[string]int, n int) bool {
	for _, k := range ks {
		if counts[k.fault] < n {
			return false
		}
	}
	return true
}

// line is a tally's summary line.
func line(t *tally) string {
	return fmt.Sprintf("trials %s, faults %s, acknowledged %s, lost %s, corrupt-returned %s, invented %s, duplicates-beyond-window %s",
		thousands.Int(t.trials), thousands.Int(t.faults), thousands.Int(t.acked), thousands.Int(t.lost),
		thousands.Int(t.corrupt), thousands.Int(t.invented), thousands.Int(t.dupBeyond))
}

// details are the other figures, when not zero.
func details(t *tally) string {
	var s []string
	add := func(n int64, what string) {
		if n != 0 {
			s = append(s, thousands.Int(n)+" "+what)
		}
	}
	add(t.processed, "processed")
	add(t.dupWithin, "duplicates within window")
	add(t.notDense, "NOT DENSE")
	add(t.readErrors, "READ ERRORS")
	add(t.verifyBad, "VERIFY PROBLEMS")
	add(t.committedAhead, "COMMITTED AHEAD")
	add(t.skipped, "SKIPPED BEYOND WINDOW")
	add(t.detected, "flips detected")
	add(t.harmless, "flips harmless")
	add(t.undetected, "flips not detected")
	add(t.repairedAway, "acknowledged records moved aside by repair (reported)")
	add(t.rewound, "of them a Kafka group going back below its last commit")
	add(t.dirtyReads, "records processed before a power loss took them")
	add(t.pastHead, "committed offsets left past the head (reset by repair)")
	return strings.Join(s, ", ")
}

func report(w io.Writer, r *result, took time.Duration) {
	fmt.Fprintf(w, "ran %s\n", took.Round(time.Second))
	names := make([]string, 0, len(r.byKind))
	for n := range r.byKind {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		t := r.byKind[n]
		fmt.Fprintf(w, "  %-20s %s\n", n, line(t))
		if d := details(t); d != "" {
			fmt.Fprintf(w, "  %-20s (%s)\n", "", d)
		}
	}
	for _, f := range []string{"kill9", "powerloss", "bitflip", "diskerror"} {
		if t := r.byFault[f]; t != nil {
			fmt.Fprintf(w, "%-22s %s\n", f+":", line(t))
		}
	}
	fmt.Fprintln(w, line(&r.total))
}

// buildPassbook builds cmd/passbook into dir (with the race detector when
// this binary has it).
func buildPassbook(dir string) (string, error) {
	out := filepath.Join(dir, "passbook")
	args := []string{"build", "-o", out}
	if raceEnabled {
		args = append(args, "-race")
	}
	args = append(args, "github.com/passbook-log/passbook/cmd/passbook")
	cmd := exec.Command("go", args...)
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build passbook (or give -passbook): %v\n%s", err, b)
	}
	return out, nil
}
