package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Apache Kafka itself: one KRaft node (broker and controller in one
// JVM) from Kafka's own jars, which tests/kafka/cluster.sh fetches from
// Maven Central (kafka_jars) and caches outside the repository. It runs
// with Kafka's settings and the JVM options of its kafka-server-start.sh
// (1 GiB heap, G1). Two rows: Kafka's defaults, where acks=all on one
// broker means "in that broker's page cache" (Kafka does not fsync
// before it acknowledges; it counts on replicas), and flush.messages=1,
// Kafka's own setting for an fsync of the log before every
// acknowledgement, for the fsync workload.

// kafkaJVM is what bin/kafka-server-start.sh and kafka-run-class.sh give
// the broker when nothing is overridden.
var kafkaJVM = []string{"-Xmx1G", "-Xms1G", "-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
	"-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent", "-Djava.awt.headless=true"}

// apacheKafka finds (or fetches) the jars and returns both rows; when
// they cannot be had, the rows say why and are skipped.
func apacheKafka(ctx context.Context) []*system {
	jars, version, why := kafkaJars(ctx)
	rows := []*system{apacheKafkaSystem(jars, false), apacheKafkaSystem(jars, true)}
	for _, s := range rows {
		s.version = "Apache Kafka " + version + ifSet(", ", javaVersion())
		s.unavailable = why
	}
	return rows
}

// kafkaJars runs tests/kafka/cluster.sh's kafka_jars, which fetches the
// jars with Maven once, and returns their directory and version, or why
// there are none.
func kafkaJars(ctx context.Context) (dir, version, why string) {
	out, err := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", "github.com/passbook-log/passbook").Output()
	if err != nil {
		return "", "?", "cannot find the repository (for tests/kafka/cluster.sh): " + err.Error()
	}
	root := strings.TrimSpace(string(out))
	cmd := exec.CommandContext(ctx, "bash", "-c", `. tests/kafka/cluster.sh && echo "$KAFKA_VERSION" && kafka_jars >&2 && echo "$KAFKA_JARS"`)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err = cmd.Output()
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) > 0 {
		version = lines[0]
	}
	if err != nil || len(lines) < 2 {
		msg := strings.Join(strings.Fields(stderr.String()), " ")
		if msg == "" && err != nil {
			msg = err.Error()
		}
		return "", version, "its jars could not be had: " + msg
	}
	return lines[1], version, ""
}

func javaVersion() string {
	out, err := exec.Command("java", "-version").CombinedOutput()
	if err != nil {
		return ""
	}
	first, _, _ := strings.Cut(string(out), "\n")
	return strings.TrimSpace(first)
}

func apacheKafkaSystem(jars string, fsync bool) *system {
	s := &system{key: "kafka"}
	if fsync {
		s.name = "Apache Kafka (KRaft, flush.messages=1)"
		s.variant = true
		s.skip = onlyFor(wDurable, "Kafka's fsync configuration runs only the fsync workload; see the row with its defaults")
		s.durability = func(workload) string {
			return "acks=all with flush.messages=1: the log fsync'd before the acknowledgement"
		}
	} else {
		s.name = "Apache Kafka (KRaft, defaults)"
		s.skip = func(w workload) string {
			if w == wDurable {
				return "acks=all on one broker with Kafka's defaults is the page cache, no fsync: see the flush.messages=1 row"
			}
			return ""
		}
		s.durability = func(w workload) string {
			switch w {
			case wReplay:
				return "franz-go consumer, Fetch from offset 0"
			case wLatency:
				return "acks=1 (the broker's page cache); franz-go consumer long-polling Fetch"
			case wCommit:
				return "OffsetCommit per record, into __consumer_offsets (page cache)"
			}
			return "acks=1: the broker's page cache when acknowledged (survives a broker kill, not a power loss)"
		}
	}
	s.start = func(ctx context.Context, dir string) (target, error) { return startApacheKafka(ctx, dir, jars, fsync) }
	return s
}

func startApacheKafka(ctx context.Context, dir, jars string, fsync bool) (target, error) {
	ports, err := freePorts(2)
	if err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", ports[0])
	props := fmt.Sprintf(`process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:%[2]d
listeners=PLAINTEXT://%[1]s,CONTROLLER://127.0.0.1:%[2]d
advertised.listeners=PLAINTEXT://%[1]s
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
log.dirs=%[3]s
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
group.initial.rebalance.delay.ms=0
`, addr, ports[1], filepath.Join(dir, "kafka-logs"))
	if fsync {
		props += "log.flush.interval.messages=1\n"
	}
	conf := filepath.Join(dir, "server.properties")
	if err := os.WriteFile(conf, []byte(props), 0o644); err != nil {
		return nil, err
	}
	classpath := filepath.Join(jars, "*")
	id := make([]byte, 16)
	rand.Read(id)
	format := exec.CommandContext(ctx, "java", "-cp", classpath, "kafka.tools.StorageTool", "format",
		"-t", base64.RawURLEncoding.EncodeToString(id), "-c", conf)
	if out, err := format.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("kafka-storage format: %v: %s", err, bytes.TrimSpace(out))
	}
	began := time.Now()
	argv := append(append([]string{"java"}, kafkaJVM...), "-cp", classpath, "kafka.Kafka", conf)
	p, err := startProc("kafka", filepath.Join(dir, "kafka.log"), nil, argv...)
	if err != nil {
		return nil, err
	}
	t := &kafkaTarget{addr: addr, stopServer: func() error { p.stop(30 * time.Second); return nil }, filled: map[string]int{}}
	return t, t.started(ctx, p, began)
}
