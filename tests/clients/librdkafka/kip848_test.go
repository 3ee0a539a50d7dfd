package librdkafka

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

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// A librdkafka group member in a child process: this test binary run
// with kip848MemberEnv set to a JSON kip848Member, in
// TestKIP848_MemberChild. It consumes with group.protocol=consumer (or
// classic), commits each record synchronously after processing it, and
// reports on stdout:
//
//	ASSIGNED p p …   its assignment, each time it changes
//	P p o            processed the record at partition p, offset o
//	C p o            its commit of it returned
const kip848MemberEnv = "PASSBOOK_LIBRDKAFKA_MEMBER"

type kip848Member struct {
	Addr, Group, Topic, Protocol, InstanceID string
}

// TestKIP848_MemberChild is the member child; run by itself it skips.
func TestKIP848_MemberChild(t *testing.T) {
	js := os.Getenv(kip848MemberEnv)
	if js == "" {
		t.Skip("the member child of the KIP-848 tests")
	}
	var cfg kip848Member
	if err := json.Unmarshal([]byte(js), &cfg); err != nil {
		t.Fatal(err)
	}
	go func() {
		io.Copy(io.Discard, os.Stdin) // stdin closes when the test process dies
		os.Exit(3)
	}()
	conf := kafka.ConfigMap{
		"bootstrap.servers":  cfg.Addr,
		"group.id":           cfg.Group,
		"group.protocol":     cfg.Protocol,
		"auto.offset.reset":  "earliest",
		"enable.auto.commit": false,
	}
	if cfg.InstanceID != "" {
		conf["group.instance.id"] = cfg.InstanceID
	}
	if cfg.Protocol == "classic" {
		conf["session.timeout.ms"] = 6000
		conf["heartbeat.interval.ms"] = 200
	}
	c, err := kafka.NewConsumer(&conf)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SubscribeTopics([]string{cfg.Topic}, nil); err != nil {
		t.Fatal(err)
	}
	out := bufio.NewWriter(os.Stdout)
	say := func(format string, args ...any) {
		fmt.Fprintf(out, format+"\n", args...)
		out.Flush()
	}
	last := "-"
	for {
		if as, err := c.Assignment(); err == nil {
			var ps []string
			for _, tp := range as {
				ps = append(ps, strconv.Itoa(int(tp.Partition)))
			}
			slices.SortFunc(ps, func(a, b string) int { x, _ := strconv.Atoi(a); y, _ := strconv.Atoi(b); return x - y })
			if now := strings.Join(ps, " "); now != last {
				last = now
				say("ASSIGNED %s", now)
			}
		}
		m, err := c.ReadMessage(100 * time.Millisecond)
		if err != nil {
			if ke, ok := err.(kafka.Error); ok && (ke.IsTimeout() || ke.IsRetriable()) {
				continue
			}
			fmt.Fprintln(os.Stderr, "member:", err)
			continue
		}
		say("P %d %d", m.TopicPartition.Partition, m.TopicPartition.Offset)
		if _, err := c.CommitMessage(m); err != nil {
			fmt.Fprintln(os.Stderr, "member: commit:", err)
			continue
		}
		say("C %d %d", m.TopicPartition.Partition, m.TopicPartition.Offset)
	}
}

// member is a running member child and what it reported.
type member struct {
	name string
	cmd  *exec.Cmd

	mu        sync.Mutex
	assigned  []int32
	changes   int // ASSIGNED lines
	processed map[[2]int64]int
	committed map[[2]int64]bool
	exited    chan struct{}
}

func startMember(t *testing.T, name string, cfg kip848Member) *member {
	t.Helper()
	js, _ := json.Marshal(cfg)
	cmd := exec.Command(os.Args[0], "-test.run=^TestKIP848_MemberChild$")
	cmd.Env = append(os.Environ(), kip848MemberEnv+"="+string(js))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	m := &member{name: name, cmd: cmd, processed: map[[2]int64]int{}, committed: map[[2]int64]bool{}, exited: make(chan struct{})}
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

func (m *member) handle(line string) {
	f := strings.Fields(line)
	if len(f) == 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	at := func() [2]int64 {
		p, _ := strconv.ParseInt(f[1], 10, 64)
		o, _ := strconv.ParseInt(f[2], 10, 64)
		return [2]int64{p, o}
	}
	switch f[0] {
	case "ASSIGNED":
		m.assigned = m.assigned[:0]
		for _, s := range f[1:] {
			p, _ := strconv.Atoi(s)
			m.assigned = append(m.assigned, int32(p))
		}
		m.changes++
	case "P":
		m.processed[at()]++
	case "C":
		m.committed[at()] = true
	}
}

func (m *member) partitions() []int32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.assigned)
}

func (m *member) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, k := range m.processed {
		n += k
	}
	return n
}

// waitUntil polls cond; the deadline only keeps a broken run from
// hanging.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// eachOnce reports whether the members' assignments cover partitions
// 0 … n−1, each exactly once.
func eachOnce(n int, ms ...*member) bool {
	seen := map[int32]int{}
	for _, m := range ms {
		for _, p := range m.partitions() {
			seen[p]++
		}
	}
	for p := range int32(n) {
		if seen[p] != 1 {
			return false
		}
	}
	return len(seen) == n
}

func createTopic(t *testing.T, addr, topic string, partitions int) {
	t.Helper()
	adm, err := kafka.NewAdminClient(&kafka.ConfigMap{"bootstrap.servers": addr})
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	res, err := adm.CreateTopics(context.Background(), []kafka.TopicSpecification{{Topic: topic, NumPartitions: partitions, ReplicationFactor: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Error.Code() != kafka.ErrNoError {
		t.Fatal(res[0].Error)
	}
}

func produce(t *testing.T, addr, topic string, partitions, perPart int) {
	t.Helper()
	p, err := kafka.NewProducer(&kafka.ConfigMap{"bootstrap.servers": addr, "linger.ms": 5})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	deliveries := make(chan kafka.Event, partitions*perPart)
	for part := range partitions {
		for i := range perPart {
			msg := &kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: int32(part)}, Value: fmt.Appendf(nil, "%d-%d", part, i)}
			if err := p.Produce(msg, deliveries); err != nil {
				t.Fatal(err)
			}
		}
	}
	for range partitions * perPart {
		if m := (<-deliveries).(*kafka.Message); m.TopicPartition.Error != nil {
			t.Fatal(m.TopicPartition.Error)
		}
	}
}

// committedOffsets is what group committed on topic's partitions.
func committedOffsets(t *testing.T, addr, group, topic string, partitions int) []int64 {
	t.Helper()
	adm, err := kafka.NewAdminClient(&kafka.ConfigMap{"bootstrap.servers": addr})
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	var tps []kafka.TopicPartition
	for p := range partitions {
		tps = append(tps, kafka.TopicPartition{Topic: &topic, Partition: int32(p)})
	}
	res, err := adm.ListConsumerGroupOffsets(context.Background(), []kafka.ConsumerGroupTopicPartitions{{Group: group, Partitions: tps}})
	if err != nil {
		t.Fatal(err)
	}
	out := make([]int64, partitions)
	for _, tp := range res.ConsumerGroupsTopicPartitions[0].Partitions {
		out[tp.Partition] = int64(tp.Offset)
	}
	return out
}

// Three librdkafka members with group.protocol=consumer (KIP-848, the
// broker assigns), in child processes, share a 6-partition topic, each
// partition owned by exactly one; one is SIGKILLed, and at the session
// timeout (the broker's group.consumer.session.timeout.ms) the two others
// own its partitions and resume from its commits: every record processed,
// twice only those in doubt at the kill. A classic librdkafka group reads
// the same topic beside them, with its own offsets.
func TestKIP848_ThreeMembersSurviveSIGKILL(t *testing.T) {
	const (
		partitions = 6
		perPart    = 200
		topic      = "orders"
	)
	addr := startServe(t, "--group-consumer-session-timeout", "3s", "--group-consumer-heartbeat-interval", "200ms")
	createTopic(t, addr, topic, partitions)
	produce(t, addr, topic, partitions, perPart)

	cfg := kip848Member{Addr: addr, Group: "orders-848", Topic: topic, Protocol: "consumer"}
	var ms []*member
	for i := range 3 {
		ms = append(ms, startMember(t, fmt.Sprintf("member-%d", i), cfg))
	}
	classic := startMember(t, "classic", kip848Member{Addr: addr, Group: "orders-classic", Topic: topic, Protocol: "classic"})
	waitUntil(t, "each partition owned by exactly one of the three", func() bool { return eachOnce(partitions, ms...) && len(ms[0].partitions()) > 0 })

	victim, survivors := ms[0], ms[1:]
	waitUntil(t, "the victim processing", func() bool { return victim.count() >= 20 })
	victim.cmd.Process.Kill()
	<-victim.exited
	killed := time.Now()
	lost := victim.partitions()
	waitUntil(t, "the two others owning every partition once", func() bool { return eachOnce(partitions, survivors...) })
	movedAfter := time.Since(killed) // reported, not asserted: the session timeout, 3 s, and a heartbeat or two

	seen := func(at [2]int64) int {
		n := 0
		for _, m := range ms {
			m.mu.Lock()
			n += m.processed[at]
			m.mu.Unlock()
		}
		return n
	}
	waitUntil(t, "every record processed by the group", func() bool {
		for p := range int64(partitions) {
			for o := range int64(perPart) {
				if seen([2]int64{p, o}) == 0 {
					return false
				}
			}
		}
		return true
	})
	victim.mu.Lock()
	var inDoubt [][2]int64
	for at := range victim.processed {
		if !victim.committed[at] {
			inDoubt = append(inDoubt, at)
		}
	}
	victim.mu.Unlock()
	dups := 0
	for p := range int64(partitions) {
		for o := range int64(perPart) {
			if k := seen([2]int64{p, o}); k > 1 {
				dups += k - 1
				if !slices.Contains(inDoubt, [2]int64{p, o}) {
					t.Errorf("partition %d offset %d processed %d times, and its commit had returned", p, o, k)
				}
			}
		}
	}
	full := func(group string) func() bool {
		return func() bool {
			for _, o := range committedOffsets(t, addr, group, topic, partitions) {
				if o != perPart {
					return false
				}
			}
			return true
		}
	}
	waitUntil(t, "the KIP-848 group's commits at the end of each partition", full("orders-848"))
	waitUntil(t, "the classic group's commits at the end of each partition", full("orders-classic"))
	if n := classic.count(); n < partitions*perPart {
		t.Errorf("the classic group processed %d records, want %d", n, partitions*perPart)
	}
	t.Logf("killed %s owning %v after %d records; the two others owned them %v after the kill (session timeout 3 s); %d processed once, %d twice (%d in doubt), 0 missed; the classic group read all %d beside them",
		victim.name, lost, victim.count(), movedAfter.Round(time.Millisecond), partitions*perPart-dups, dups, len(inDoubt), partitions*perPart)
}
