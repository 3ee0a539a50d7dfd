package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/passbook-log/passbook/internal/thousands"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// runMirror measures `passbook mirror` (a data directory to Kafka
// brokers) beside two other ways to put the same records on the same
// target: kcat piped into kcat (kcat -C … | kcat -P …, from a topic of
// that cluster), and franz-go producing them itself (an idempotent
// producer, acks=all, as the mirror's). The target is -brokers (a real
// cluster) or franz-go's kfake in a process of its own.
func runMirror(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("mirror", flag.ContinueOnError)
	fs.SetOutput(stderr)
	brokers := fs.String("brokers", "", "the Kafka cluster to write to, HOST:PORT[,…] (default: kfake, one broker, in memory, in a process of its own)")
	n := fs.Int("n", 1_000_000, "records per trial")
	size := fs.Int("size", 100, "bytes per record value")
	trials := fs.Int("trials", 3, "trials of each way")
	dir := fs.String("dir", "", "working directory (default a temporary one)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	work := *dir
	if work == "" {
		d, err := os.MkdirTemp("", "bench-mirror-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		work = d
	}
	bin, err := buildPassbook(ctx, work)
	if err != nil {
		return err
	}
	target := *brokers
	if target == "" {
		kt, err := startKfake(ctx, work, false)
		if err != nil {
			return fmt.Errorf("kfake: %w", err)
		}
		defer kt.close()
		target = kt.(*kafkaTarget).addr
	}
	_, kcatErr := exec.LookPath("kcat")

	// The source: one data directory, a topic per trial of n records.
	data := filepath.Join(work, "data")
	line := strings.Repeat("x", *size-9)
	var in strings.Builder
	for i := range *n {
		fmt.Fprintf(&in, "%08d %s\n", i, line)
	}
	stamp := time.Now().Format("150405")
	for t := range *trials {
		topic := fmt.Sprintf("mirror-%s-%d", stamp, t)
		if out, err := exec.CommandContext(ctx, bin, "--data", data, "topic", "create", topic).CombinedOutput(); err != nil {
			return fmt.Errorf("topic create: %v: %s", err, out)
		}
		cmd := exec.CommandContext(ctx, bin, "--data", data, "produce", topic)
		cmd.Stdin = strings.NewReader(in.String())
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("produce: %v: %s", err, out)
		}
	}
	bytes := int64(*n) * int64(*size)
	rates := map[string][]float64{}
	for t := range *trials {
		topic := fmt.Sprintf("mirror-%s-%d", stamp, t)
		// passbook mirror: the data directory to the target.
		began := time.Now()
		cmd := exec.CommandContext(ctx, bin, "--data", data, "mirror", "--to", target, "--topics", topic)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("mirror: %v: %s", err, out)
		}
		rates["mirror"] = append(rates["mirror"], time.Since(began).Seconds())

		for _, to := range []string{topic + "-kcat", topic + "-franz"} {
			if out, err := exec.CommandContext(ctx, bin, "topic", "create", to, "--brokers", target).CombinedOutput(); err != nil {
				return fmt.Errorf("topic create %s: %v: %s", to, err, out)
			}
		}
		// kcat | kcat: from the topic the mirror made, to a new one.
		if kcatErr == nil {
			began = time.Now()
			pipe := fmt.Sprintf("kcat -C -b %s -t %s -o beginning -e -q -X fetch.max.bytes=67108864 | kcat -P -b %s -t %s-kcat -X enable.idempotence=true -X acks=all -X linger.ms=5",
				target, topic, target, topic)
			if out, err := exec.CommandContext(ctx, "bash", "-o", "pipefail", "-c", pipe).CombinedOutput(); err != nil {
				return fmt.Errorf("kcat: %v: %s", err, out)
			}
			rates["kcat"] = append(rates["kcat"], time.Since(began).Seconds())
			if got, err := countRecords(ctx, target, topic+"-kcat"); err != nil || got != int64(*n) {
				return fmt.Errorf("kcat wrote %d records to %s-kcat, want %d (%v)", got, topic, *n, err)
			}
		}

		// franz-go producing the same values itself.
		vals := make([][]byte, *n)
		for i := range vals {
			vals[i] = fmt.Appendf(nil, "%08d %s", i, line)
		}
		cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(target, ",")...), kgo.ProducerLinger(0),
			kgo.MaxBufferedRecords(1<<20))
		if err != nil {
			return err
		}
		began = time.Now()
		err = produceWindow(ctx, cl, topic+"-franz", vals)
		el := time.Since(began).Seconds()
		cl.Close()
		if err != nil {
			return fmt.Errorf("franz-go produce: %w", err)
		}
		rates["franz-go"] = append(rates["franz-go"], el)
		if got, err := countRecords(ctx, target, topic); err != nil || got != int64(*n) {
			return fmt.Errorf("the mirror wrote %d records to %s, want %d (%v)", got, topic, *n, err)
		}
	}
	where := "franz-go kfake (one broker, in memory, its own process)"
	if *brokers != "" {
		where = *brokers
	}
	fmt.Fprintf(stdout, "%s records of %d bytes to %s, %d trials, median (min–max):\n\n", thousands.Int(*n), *size, where, *trials)
	fmt.Fprintln(stdout, "| way | records/s | MB/s |")
	fmt.Fprintln(stdout, "|---|---|---|")
	for _, way := range []struct{ key, name string }{
		{"mirror", "`passbook mirror --data DIR --to BROKERS` (reads the directory, idempotent producer, acks=all, map fsync'd per batch)"},
		{"kcat", "`kcat -C … \\| kcat -P …` (idempotent, acks=all), from a topic of the same cluster"},
		{"franz-go", "franz-go producing the records itself (idempotent, acks=all)"},
	} {
		secs := rates[way.key]
		if len(secs) == 0 {
			fmt.Fprintf(stdout, "| %s | skipped: kcat is not installed | |\n", way.name)
			continue
		}
		slices.Sort(secs)
		med, lo, hi := secs[len(secs)/2], secs[len(secs)-1], secs[0] // slowest time is the lowest rate
		r := func(s float64) string { return thousands.Int(int64(float64(*n) / s)) }
		m := func(s float64) string { return fmt.Sprintf("%.1f", float64(bytes)/s/1e6) }
		fmt.Fprintf(stdout, "| %s | %s (%s–%s) | %s (%s–%s) |\n", way.name, r(med), r(lo), r(hi), m(med), m(lo), m(hi))
	}
	return nil
}

// countRecords is a one-partition topic's high watermark.
func countRecords(ctx context.Context, brokers, topic string) (int64, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(brokers, ",")...))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	req := kmsg.NewPtrListOffsetsRequest()
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = 0, -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return 0, err
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return 0, fmt.Errorf("list offsets of %s: no partition 0 in the answer", topic)
	}
	p := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
		return 0, fmt.Errorf("list offsets of %s: %w", topic, err)
	}
	return p.Offset, nil
}
