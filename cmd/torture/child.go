package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/passbook-log/passbook"
)

// childEnv, when set, makes the torture binary (or its test binary) run
// the embedded workload as a child process to be killed: the value is
// "dir;tag;seed;millis" (millis 0: until killed).
const childEnv = "PASSBOOK_TORTURE_CHILD"

// childMain runs the child if the environment asks for one, and reports
// whether it did.
func childMain() bool {
	spec := os.Getenv(childEnv)
	if spec == "" {
		return false
	}
	f := strings.Split(spec, ";")
	if len(f) != 4 {
		fmt.Fprintln(os.Stderr, "torture child: bad spec", spec)
		os.Exit(2)
	}
	seed, _ := strconv.ParseUint(f[2], 10, 64)
	ms, _ := strconv.Atoi(f[3])
	if err := runChild(f[0], f[1], seed, time.Duration(ms)*time.Millisecond); err != nil {
		fmt.Fprintln(os.Stderr, "torture child:", err)
		os.Exit(1)
	}
	return true
}

// runChild opens dir and runs the embedded workload for d (or until it
// is killed, or told to stop with SIGTERM), reporting every event on
// stdout, one line per write(2), so that a line is either wholly in the
// pipe or not there when the process dies.
func runChild(dir, tag string, seed uint64, d time.Duration) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	if d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	db, err := passbook.Open(dir, &passbook.Options{MinSegmentBytes: -1})
	if err != nil {
		return err
	}
	w := &embedded{db: db, sink: &lineSink{w: os.Stdout}, tag: tag, producers: 3, fsync: 0.2, rng: rand.New(rand.NewPCG(seed, 1))}
	err = w.run(ctx)
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		_, err = io.WriteString(os.Stdout, "DONE\n")
	}
	return err
}

// lineSink writes events as tab-separated lines.
type lineSink struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *lineSink) line(fields ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	io.WriteString(s.w, strings.Join(fields, "\t")+"\n")
}

func (s *lineSink) Sent(value, key, hdr string, part int32) {
	s.line("S", value, key, hdr, strconv.Itoa(int(part)))
}

func (s *lineSink) Acked(part int32, off int64, durable bool, values ...string) {
	s.line(append([]string{"A", strconv.Itoa(int(part)), strconv.FormatInt(off, 10), strconv.FormatBool(durable)}, values...)...)
}

func (s *lineSink) Started(name string, d delivery, start map[int32]int64) {
	f := []string{"B", name}
	for p, off := range start {
		f = append(f, fmt.Sprintf("%d:%d", p, off))
	}
	s.line(f...)
}

func (s *lineSink) Processed(name string, p int32, off int64, value string) bool {
	s.line("P", name, strconv.Itoa(int(p)), strconv.FormatInt(off, 10), value)
	return true
}

// Committed is not reported by the embedded workload: its consumers
// commit inside package consumer.
func (s *lineSink) Committed(name string, p int32, next int64) {}

// child is a running child process.
type child struct {
	cmd    *exec.Cmd
	done   chan error // the reader's end: nil, or a protocol error
	acks   chan struct{}
	stderr *strings.Builder // valid once cmd.Wait has returned
}

// startChild starts the embedded workload in a child process over dir,
// feeding its events into lg.
func startChild(dir, tag string, seed uint64, d time.Duration, lg *ledger) (*child, error) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s;%s;%d;%d", childEnv, dir, tag, seed, d.Milliseconds()))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &child{cmd: cmd, done: make(chan error, 1), acks: make(chan struct{}), stderr: &stderr}
	go func() {
		c.done <- readEvents(out, lg, c.acks)
	}()
	return c, nil
}

// readEvents applies a child's event lines to lg until EOF; the first
// acknowledgement closes acked.
func readEvents(r io.Reader, lg *ledger, acked chan struct{}) error {
	br := bufio.NewReaderSize(r, 64<<10)
	first := true
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			if err == io.EOF {
				err = nil // a line cut short by the kill can only be the last one: dropped
			}
			return err
		}
		f := strings.Split(strings.TrimSuffix(line, "\n"), "\t")
		switch f[0] {
		case "S":
			p, _ := strconv.Atoi(f[4])
			lg.Sent(f[1], f[2], f[3], int32(p))
		case "A":
			p, _ := strconv.Atoi(f[1])
			off, _ := strconv.ParseInt(f[2], 10, 64)
			lg.Acked(int32(p), off, f[3] == "true", f[4:]...)
			if first {
				first = false
				close(acked)
			}
		case "B":
			start := map[int32]int64{}
			for _, s := range f[2:] {
				p, off, _ := strings.Cut(s, ":")
				pi, _ := strconv.Atoi(p)
				o, _ := strconv.ParseInt(off, 10, 64)
				start[int32(pi)] = o
			}
			for _, d := range deliveries {
				if d.name == f[1] {
					lg.Started(f[1], d.d, start)
				}
			}
		case "P":
			p, _ := strconv.Atoi(f[2])
			off, _ := strconv.ParseInt(f[3], 10, 64)
			lg.Processed(f[1], int32(p), off, f[4])
		}
	}
}
