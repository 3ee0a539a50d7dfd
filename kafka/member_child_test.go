package kafka

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// A group member in a child process: the test binary, re-executed with
// memberEnv set to a JSON memberConfig (see TestMain), runs a franz-go
// group consumer that commits each record synchronously after
// processing it, and reports on stdout:
//
//	ASSIGNED t/p t/p …   after each assignment (the full set it owns)
//	P p o                processed the record at partition p, offset o
//	C p o                its commit returned
//	KILLME p o           processed o and now waits to be killed
//	DONE                 processed its last record and left the group
const memberEnv = "PASSBOOK_KAFKA_MEMBER"

type memberConfig struct {
	Addr, Group, Topic string
	Session, Heartbeat time.Duration
	// Delay is spent on each record between processing it and
	// committing it.
	Delay time.Duration
	// KillAt: after processing this offset, report KILLME and hang
	// without committing it. −1 for never.
	KillAt int64
	// DoneAt: after processing and committing this offset, leave the
	// group and report DONE. −1 for never.
	DoneAt int64
	// KIP848 makes the member use the consumer group protocol of
	// KIP-848 (the broker assigns); InstanceID makes it static.
	KIP848     bool
	InstanceID string
}

func memberChild(js string) {
	var cfg memberConfig
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "member:", err)
		os.Exit(1)
	}
	if err := json.Unmarshal([]byte(js), &cfg); err != nil {
		fail(err)
	}
	go func() {
		// stdin closes when the test process dies: do not outlive it.
		io.Copy(io.Discard, os.Stdin)
		os.Exit(3)
	}()
	out := bufio.NewWriter(os.Stdout)
	var mu sync.Mutex
	say := func(format string, args ...any) {
		mu.Lock()
		fmt.Fprintf(out, format+"\n", args...)
		out.Flush()
		mu.Unlock()
	}
	owned := map[int32]bool{}
	report := func() {
		var ps []string
		for p := range 64 {
			if owned[int32(p)] {
				ps = append(ps, strconv.Itoa(p))
			}
		}
		say("ASSIGNED %s", strings.Join(ps, " "))
	}
	opts := []kgo.Opt{kgo.SeedBrokers(cfg.Addr),
		kgo.ConsumerGroup(cfg.Group), kgo.ConsumeTopics(cfg.Topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(), kgo.BlockRebalanceOnPoll(),
		kgo.SessionTimeout(cfg.Session), kgo.HeartbeatInterval(cfg.Heartbeat),
		kgo.RebalanceTimeout(10 * time.Second), kgo.FetchMaxWait(200 * time.Millisecond),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			for _, p := range m[cfg.Topic] {
				owned[p] = true
			}
			report()
		}),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			for _, p := range m[cfg.Topic] {
				delete(owned, p)
			}
			report()
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			for _, p := range m[cfg.Topic] {
				delete(owned, p)
			}
			report()
		}),
	}
	if cfg.KIP848 {
		opts = append(opts, kgo.ServerSideBalancer())
	}
	if cfg.InstanceID != "" {
		// Eager, so that a rebalance is one generation: franz-go's
		// cooperative-sticky joins a second time after one.
		opts = append(opts, kgo.InstanceID(cfg.InstanceID), kgo.Balancers(kgo.RangeBalancer()))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		fail(err)
	}
	ctx := context.Background()
	for {
		// Few records per poll: a rebalance waits for AllowRebalance.
		fs := cl.PollRecords(ctx, 10)
		fs.EachError(func(t string, p int32, err error) { fmt.Fprintln(os.Stderr, "member: fetch:", t, p, err) })
		for _, r := range fs.Records() {
			say("P %d %d", r.Partition, r.Offset)
			time.Sleep(cfg.Delay) // the rest of the work, before the commit
			if r.Offset == cfg.KillAt {
				say("KILLME %d %d", r.Partition, r.Offset)
				select {}
			}
			if err := cl.CommitRecords(ctx, r); err != nil {
				// Refused (a rebalance took the partition): the record
				// is someone else's to process again.
				fmt.Fprintln(os.Stderr, "member: commit:", r.Partition, r.Offset, err)
				continue
			}
			say("C %d %d", r.Partition, r.Offset)
			if r.Offset == cfg.DoneAt {
				cl.AllowRebalance()
				cl.Close() // commits nothing more; leaves the group
				say("DONE")
				os.Exit(0)
			}
		}
		cl.AllowRebalance()
	}
}

// memberProc is a running member child and what it reported.
type memberProc struct {
	name string
	cmd  *exec.Cmd

	mu        sync.Mutex
	assigned  []int32
	processed map[[2]int64]int    // (partition, offset) → times
	firstP    time.Time           // when the first record was processed
	partFirst map[int32]time.Time // when the first record of each partition was
	committed map[[2]int64]bool
	lines     chan string // KILLME, DONE and ASSIGNED lines
	exited    chan struct{}
}

func startMember(t *testing.T, name string, cfg memberConfig) *memberProc {
	t.Helper()
	js, _ := json.Marshal(cfg)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), memberEnv+"="+string(js))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cmd.StdinPipe(); err != nil { // kept open until this process exits
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	m := &memberProc{name: name, cmd: cmd, processed: map[[2]int64]int{}, committed: map[[2]int64]bool{}, partFirst: map[int32]time.Time{},
		lines: make(chan string, 1000), exited: make(chan struct{})}
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-m.exited
	})
	go func() {
		defer close(m.exited)
		defer cmd.Wait()
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			m.handle(sc.Text())
		}
	}()
	return m
}

func (m *memberProc) handle(line string) {
	f := strings.Fields(line)
	if len(f) == 0 {
		return
	}
	at := func() [2]int64 {
		p, _ := strconv.ParseInt(f[1], 10, 64)
		o, _ := strconv.ParseInt(f[2], 10, 64)
		return [2]int64{p, o}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	switch f[0] {
	case "P":
		now, a := time.Now(), at()
		if m.firstP.IsZero() {
			m.firstP = now
		}
		if _, ok := m.partFirst[int32(a[0])]; !ok {
			m.partFirst[int32(a[0])] = now
		}
		m.processed[a]++
		return
	case "C":
		m.committed[at()] = true
		return
	case "ASSIGNED":
		m.assigned = m.assigned[:0]
		for _, s := range f[1:] {
			p, _ := strconv.Atoi(s)
			m.assigned = append(m.assigned, int32(p))
		}
	}
	select {
	case m.lines <- line:
	default:
	}
}

// waitLine waits for a reported line starting with prefix.
func (m *memberProc) waitLine(t *testing.T, prefix string, timeout time.Duration) string {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case l := <-m.lines:
			if strings.HasPrefix(l, prefix) {
				return l
			}
		case <-m.exited:
			t.Fatalf("member %s exited before reporting %s", m.name, prefix)
		case <-deadline:
			t.Fatalf("member %s did not report %s within %v", m.name, prefix, timeout)
		}
	}
}

func (m *memberProc) counts() (processed, committed int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, n := range m.processed {
		processed += n
	}
	return processed, len(m.committed)
}

// timesProcessed counts how often the members processed the record at
// (partition, offset).
func timesProcessed(members []*memberProc, at [2]int64) int {
	n := 0
	for _, m := range members {
		m.mu.Lock()
		n += m.processed[at]
		m.mu.Unlock()
	}
	return n
}

// auditDuplicates checks that every record of partitions × perPart the
// members processed more than once is one the killed victim processed
// without its commit returning, and returns how many extra times records
// were processed and how many the victim had in doubt.
func auditDuplicates(t *testing.T, members []*memberProc, victim *memberProc, partitions, perPart int) (dups, inDoubt int) {
	t.Helper()
	victim.mu.Lock()
	var doubt [][2]int64
	for at := range victim.processed {
		if !victim.committed[at] {
			doubt = append(doubt, at)
		}
	}
	victim.mu.Unlock()
	for p := range int64(partitions) {
		for o := range int64(perPart) {
			if k := timesProcessed(members, [2]int64{p, o}); k > 1 {
				dups += k - 1
				if !slices.Contains(doubt, [2]int64{p, o}) {
					t.Errorf("partition %d offset %d processed %d times, and it was committed", p, o, k)
				}
			}
		}
	}
	return dups, len(doubt)
}
