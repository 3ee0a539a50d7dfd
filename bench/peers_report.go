package main

import (
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"
)

// The markdown report of a harness run, and the section of
// docs/benchmarks.md it replaces.

const (
	sectionBegin = "<!-- BEGIN bench peers: written by `go run -C bench .`; edits here are overwritten -->"
	sectionEnd   = "<!-- END bench peers -->"
)

// writeSection puts report into file between the section markers,
// keeping everything else in the file; a file without them gets the
// section appended, and a missing file is created.
func writeSection(file, report string) error {
	section := sectionBegin + "\n\n" + strings.TrimSpace(report) + "\n\n" + sectionEnd + "\n"
	old, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return os.WriteFile(file, []byte("# Benchmarks\n\n"+section), 0o644)
	}
	if err != nil {
		return err
	}
	s := string(old)
	i, j := strings.Index(s, sectionBegin), strings.Index(s, sectionEnd)
	if i >= 0 && j > i {
		s = s[:i] + section + strings.TrimLeft(s[j+len(sectionEnd):], "\n")
	} else {
		s = strings.TrimRight(s, "\n") + "\n\n" + section
	}
	return os.WriteFile(file, []byte(s), 0o644)
}

// rates are a cell's records/s per trial.
func (c *cell) rates() []float64 {
	var xs []float64
	for _, m := range c.trials {
		xs = append(xs, m.rate())
	}
	return xs
}

// pct is a cell's percentile q per trial, in seconds.
func (c *cell) pct(q float64) []float64 {
	var xs []float64
	for _, m := range c.trials {
		xs = append(xs, percentile(m.lat, q).Seconds())
	}
	return xs
}

// status is why a cell has no figures, or "".
func (c *cell) status() string {
	switch {
	case len(c.trials) > 0:
		return ""
	case c.skip != "":
		return "skipped: " + c.skip
	case len(c.errs) > 0:
		return "failed: " + c.errs[0]
	}
	return "not run"
}

func (r *results) lookup(name string, w workload) *cell {
	if m := r.cells[name]; m != nil {
		return m[w]
	}
	return nil
}

// median records/s of a system on a workload, or 0.
func (r *results) median(name string, w workload) float64 {
	c := r.lookup(name, w)
	if c == nil || len(c.trials) == 0 {
		return 0
	}
	return summarize(c.rates()).median
}

func (r *results) p99(name string, w workload) float64 {
	c := r.lookup(name, w)
	if c == nil || len(c.trials) == 0 {
		return 0
	}
	return summarize(c.pct(0.99)).median
}

const (
	pbEmbedded = "passbook (embedded)"
	pbKafka    = "passbook (Kafka protocol)"
)

func ratio(a, b float64) string {
	if a == 0 || b == 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f×", a/b)
}

// ms formats seconds as milliseconds.
func ms(s float64) string {
	switch {
	case s >= 0.1:
		return fmt.Sprintf("%.0f ms", s*1e3)
	case s >= 0.01:
		return fmt.Sprintf("%.1f ms", s*1e3)
	}
	return fmt.Sprintf("%.2f ms", s*1e3)
}

func (s stats) ms() string {
	if s.min == s.max {
		return ms(s.median)
	}
	return fmt.Sprintf("%s (%s–%s)", ms(s.median), strings.TrimSuffix(ms(s.min), " ms"), ms(s.max))
}

func esc(s string) string { return strings.ReplaceAll(s, "|", "\\|") }

func (r *results) markdown() string {
	var b strings.Builder
	h := r.h
	p := h.p
	fmt.Fprintf(&b, "## Side by side with peer systems\n\n")
	fmt.Fprintf(&b, "Every figure below was measured in one run of the harness in `bench/`, on one machine, each system in turn with a fresh data directory; claims are the ratios, since this machine is shared and absolute figures drift from run to run.\n\n")
	fmt.Fprintf(&b, "```\n%s\n```\n\n", h.command)
	fmt.Fprintf(&b, "- when: %s, %v in all; %d trial(s), each starting every system afresh (the order rotates between trials); figures are the median (min–max) over the trials\n",
		r.started.UTC().Format("2006-01-02 15:04 MST"), r.took.Round(time.Second), h.trials)
	for _, l := range r.machine {
		fmt.Fprintf(&b, "- %s\n", l)
	}
	fmt.Fprintf(&b, "- load average (1, 5, 15 min) before: %s; after: %s; the 1-minute figure sampled every 5 s during the run: median %.2f, min–max %.2f–%.2f (%d cores, shared with other engineers' test and fuzz runs)\n",
		r.loadAvg[0], r.loadAvg[1], r.loadDuring.median, r.loadDuring.min, r.loadDuring.max, runtime.NumCPU())
	fmt.Fprintf(&b, "- a measurement stops after %s records or %v, whichever comes first; its rate is the records done over the time taken\n", commas(int64(p.n)), p.maxTime)
	fmt.Fprintf(&b, "- every server runs on 127.0.0.1 in its own process, started and stopped (by its PID) by the harness; clients run in the harness process\n\n")
	fmt.Fprintf(&b, "| system | version | how it ran |\n|---|---|---|\n")
	for _, s := range r.systems {
		how := "ran"
		if s.unavailable != "" {
			how = "**skipped**: " + s.unavailable
		} else if errs := r.systemErrors(s); errs != "" {
			how = errs
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", s.name, esc(s.version), esc(how))
	}
	b.WriteString("\n")
	if r.limits != nil {
		b.WriteString(r.limits.markdown())
	} else if r.limitsErr != "" {
		fmt.Fprintf(&b, "### This machine's limits\n\nNot measured: %s\n\n", esc(r.limitsErr))
	}
	r.targets(&b)
	r.targets21(&b)
	r.limitsTable(&b)
	for _, w := range h.workloads {
		fmt.Fprintf(&b, "### %d. %s\n\n", w+1, w.title(p))
		switch w {
		case wLatency:
			r.latencyTable(&b, w)
		case wOpenSmall, wOpenLarge:
			r.openTable(&b, w)
		default:
			r.rateTable(&b, w)
		}
		if w == wReplay {
			r.fetchCPUTable(&b)
		}
		b.WriteString("\n")
	}
	r.appendersTable(&b)
	r.usageTable(&b)
	b.WriteString(method(p))
	return b.String()
}

// method says how the workloads run, under the tables.
func method(p params) string {
	return fmt.Sprintf(`### How the workloads run

- Values are incompressible bytes (%d B; 1 KiB in 7), cycled from a pool of 4,096. Each system runs in a fresh data directory; servers are started afresh for every trial, on 127.0.0.1, and stopped by the PID the harness started (SIGTERM to its process group, then SIGKILL). All servers of a trial are started first; then each workload runs on every system back to back, so that the figures a ratio compares were taken close together, under the same load; before each measurement the harness calls sync(2), so that none pays for the writeback of what another wrote. Clients run in the harness process; kfake runs in a process of its own (this program's `+"`_kfake`"+` command); passbook's Kafka side is a separate `+"`passbook serve`"+` process, built from this repository.
- **1. one record at a time**: every append waits for its acknowledgement before the next: one Append call for the embedded logs, one round trip for the servers (franz-go ProduceSync, NATS Publish, Redis XADD, RabbitMQ BatchSend of one message and its confirm).
- **2, 3 and 7. batches**: windows of %s records: send them, then wait for every acknowledgement (passbook AppendTo of %[2]s records; franz-go Produce ×%[2]s with no linger; NATS PublishAsync ×%[2]s; one Redis pipeline of %[2]s XADDs; one RabbitMQ BatchSend; one tidwall/wal WriteBatch). 3 is the same with each system in its configuration that fsyncs before it acknowledges.
- **4. replay**: the records are written first (not timed), then read from offset 0 (timed).
- **5. commit after every record**: a consumer reads the replay stream and commits its position after handling each record, before the next; each row says what its commit is. passbook's is consumer.New with CommitAfter and Drain: one SQLite transaction per record.
- **6. latency**: a fixed offered rate below every system's saturation, the same for all; a consumer tails the stream from before the first record.
- A measurement stops after N records or --max-time; rates are records done over time taken, so a capped run still gives a fair rate.
- The course's Python lab runs only with `+"`--python-lab FILE`"+` (it is not ours to commit): its rate is the records it reports processed over the wall time of the whole script.
`, p.size, commas(int64(p.batch))) + method21(p)
}

// systemErrors sums up a system's failed trials, or "".
func (r *results) systemErrors(s *system) string {
	n, first := 0, ""
	for _, w := range r.h.workloads {
		if c := r.lookup(s.name, w); c != nil && len(c.errs) > 0 {
			n += len(c.errs)
			if first == "" {
				first = fmt.Sprintf("%s: %s", w.key(), c.errs[0])
			}
		}
	}
	if n == 0 {
		return ""
	}
	if len(first) > 300 {
		first = first[:300] + "…"
	}
	return fmt.Sprintf("ran; %d measurement(s) failed, the first: %s", n, first)
}

// shown reports whether s gets a row in w's table.
func (r *results) shown(s *system, w workload) bool {
	c := r.lookup(s.name, w)
	if c == nil || c.hidden {
		return false
	}
	return !s.variant || len(c.trials) > 0 || len(c.errs) > 0 || (s.unavailable != "" && s.skip(w) == "")
}

func (r *results) rateTable(b *strings.Builder, w workload) {
	pe, pk := r.median(pbEmbedded, w), r.median(pbKafka, w)
	kib := w == wKiB || w == wKiBDurable
	disk := w == wKiBDurable && r.limits != nil
	extra, extraAlign := "", ""
	if kib {
		extra, extraAlign = "MiB/s | ", "---:|"
	}
	if disk {
		extra, extraAlign = extra+"÷ the disk's buffered+fdatasync bandwidth | ", extraAlign+"---:|"
	}
	// The Kafka-only workloads have no embedded row to compare with.
	embedded := !w.kafkaOnly()
	if embedded {
		fmt.Fprintf(b, "| system | what it does, what an acknowledgement means | records/s | %spassbook embedded ÷ this | passbook Kafka ÷ this |\n", extra)
		fmt.Fprintf(b, "|---|---|---:|%s---:|---:|\n", extraAlign)
	} else {
		fmt.Fprintf(b, "| system | what it does, what an acknowledgement means | records/s | %spassbook Kafka ÷ this |\n", extra)
		fmt.Fprintf(b, "|---|---|---:|%s---:|\n", extraAlign)
	}
	for _, s := range r.systems {
		if !r.shown(s, w) {
			continue
		}
		c := r.lookup(s.name, w)
		if st := c.status(); st != "" {
			fmt.Fprintf(b, "| %s | %s |  |%s  |%s\n", s.name, esc(st), strings.Repeat("  |", strings.Count(extra, "|")), map[bool]string{true: "  |"}[embedded])
			continue
		}
		st := summarize(c.rates())
		mib := ""
		if kib {
			mib = fmt.Sprintf(" %s |", commas(int64(math.Round(st.median*1024/(1<<20)))))
		}
		if disk {
			mib += fmt.Sprintf(" %.0f%% |", 100*st.median*1024/r.limits.seqBytesPerS.median)
		}
		re, rk := ratio(pe, st.median), ratio(pk, st.median)
		if s.name == pbEmbedded {
			re = "—"
		}
		if s.name == pbKafka {
			rk = "—"
		}
		if !embedded {
			fmt.Fprintf(b, "| %s | %s | %s |%s %s |\n", s.name, esc(s.durability(w)), st.rate(), mib, rk)
			continue
		}
		fmt.Fprintf(b, "| %s | %s | %s |%s %s | %s |\n", s.name, esc(s.durability(w)), st.rate(), mib, re, rk)
	}
}

func (r *results) latencyTable(b *strings.Builder, w workload) {
	pe, pk := r.p99(pbEmbedded, w), r.p99(pbKafka, w)
	fmt.Fprintf(b, "| system | how | p50 | p99 | p99.9 | this p99 ÷ passbook embedded p99 | this p99 ÷ passbook Kafka p99 |\n")
	fmt.Fprintf(b, "|---|---|---:|---:|---:|---:|---:|\n")
	for _, s := range r.systems {
		if !r.shown(s, w) {
			continue
		}
		c := r.lookup(s.name, w)
		if st := c.status(); st != "" {
			fmt.Fprintf(b, "| %s | %s |  |  |  |  |  |\n", s.name, esc(st))
			continue
		}
		p99 := summarize(c.pct(0.99)).median
		re, rk := ratio(p99, pe), ratio(p99, pk)
		if s.name == pbEmbedded {
			re = "—"
		}
		if s.name == pbKafka {
			rk = "—"
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s |\n", s.name, esc(s.durability(w)),
			summarize(c.pct(0.5)).ms(), summarize(c.pct(0.99)).ms(), summarize(c.pct(0.999)).ms(), re, rk)
	}
	fmt.Fprintf(b, "\nEvery millisecond the producer sends the records due by then (%s a millisecond), each stamped with the time just before it is sent; the consumer, started before the producer, takes the difference when it sees the record. Above 1× in the last two columns, passbook's p99 is the lower.\n",
		strings.TrimSuffix(strings.TrimSuffix(fmt.Sprintf("%.1f", float64(r.h.p.rate)/1000), "0"), "."))
}

// target is one claim of issue 9, as a ratio that must reach want.
type targetClaim struct {
	claim    string
	a, b     string // system names: a ÷ b
	bw       workload
	aw       workload
	want     float64
	lowerWin bool // latency: b ÷ a
}

func (r *results) targets(b *strings.Builder) {
	var claims []targetClaim
	add := func(c targetClaim) {
		if r.lookup(c.a, c.aw) != nil && r.lookup(c.b, c.bw) != nil {
			claims = append(claims, c)
		}
	}
	add(targetClaim{"embedded append, batched, no fsync ≥ 1.5× tidwall/wal (NoSync=true)", pbEmbedded, "tidwall/wal", wBatch, wBatch, 1.5, false})
	add(targetClaim{"embedded append, batched, fsync ≥ 1.5× tidwall/wal (NoSync=false)", pbEmbedded, "tidwall/wal", wDurable, wDurable, 1.5, false})
	add(targetClaim{"embedded append, one record at a time ≥ 1.5× tidwall/wal", pbEmbedded, "tidwall/wal", wSingle, wSingle, 1.5, false})
	add(targetClaim{"embedded replay ≥ 1.5× tidwall/wal", pbEmbedded, "tidwall/wal", wReplay, wReplay, 1.5, false})
	add(targetClaim{"Kafka-protocol durable produce (acks=all, fsync) ≥ 2× RabbitMQ Streams (its confirm: no fsync)", pbKafka, "RabbitMQ Streams", wBatch, wDurable, 2, false})
	add(targetClaim{"Kafka-protocol durable produce ≥ 3× Redis Streams (appendfsync always)", pbKafka, "Redis Streams (appendfsync always)", wDurable, wDurable, 3, false})
	add(targetClaim{"Kafka-protocol durable produce ≥ 3× Redis Streams (appendfsync everysec)", pbKafka, "Redis Streams (appendfsync everysec)", wBatch, wDurable, 3, false})
	// Replay against the best server peer.
	best, bestRate := "", 0.0
	for _, n := range []string{"NATS JetStream", "Redis Streams (appendfsync everysec)", "RabbitMQ Streams"} {
		if x := r.median(n, wReplay); x > bestRate {
			best, bestRate = n, x
		}
	}
	if best != "" {
		add(targetClaim{"Kafka-protocol replay ≥ 2× the best server peer (" + best + ")", pbKafka, best, wReplay, wReplay, 2, false})
	}
	for _, n := range []string{"NATS JetStream", "Redis Streams (appendfsync everysec)", "RabbitMQ Streams"} {
		add(targetClaim{"Kafka-protocol end-to-end p99 below " + n + "'s", pbKafka, n, wLatency, wLatency, 1, true})
	}
	// Apache Kafka itself (issue 20), on the same franz-go workloads.
	const kafkaDefaults, kafkaFsync = "Apache Kafka (KRaft, defaults)", "Apache Kafka (KRaft, flush.messages=1)"
	add(targetClaim{"Kafka-protocol produce, one at a time ≥ Apache Kafka", pbKafka, kafkaDefaults, wSingle, wSingle, 1, false})
	add(targetClaim{"Kafka-protocol produce, batched ≥ Apache Kafka", pbKafka, kafkaDefaults, wBatch, wBatch, 1, false})
	add(targetClaim{"Kafka-protocol durable produce (fsync) ≥ Apache Kafka with flush.messages=1", pbKafka, kafkaFsync, wDurable, wDurable, 1, false})
	add(targetClaim{"Kafka-protocol replay ≥ Apache Kafka", pbKafka, kafkaDefaults, wReplay, wReplay, 1, false})
	add(targetClaim{"Kafka-protocol commit after every record ≥ Apache Kafka", pbKafka, kafkaDefaults, wCommit, wCommit, 1, false})
	add(targetClaim{"Kafka-protocol end-to-end p99 below Apache Kafka's", pbKafka, kafkaDefaults, wLatency, wLatency, 1, true})
	add(targetClaim{"Kafka-protocol 1 KiB records ≥ Apache Kafka", pbKafka, kafkaDefaults, wKiB, wKiB, 1, false})
	if len(claims) == 0 {
		return
	}
	fmt.Fprintf(b, "### The targets of issue 9\n\n| target | passbook | peer | ratio | target | met |\n|---|---:|---:|---:|---:|---|\n")
	for _, c := range claims {
		var a, p float64
		var fa, fp string
		if c.lowerWin {
			a, p = r.p99(c.a, c.aw), r.p99(c.b, c.bw)
			fa, fp = ms(a), ms(p)
		} else {
			a, p = r.median(c.a, c.aw), r.median(c.b, c.bw)
			fa, fp = commas(int64(a))+"/s", commas(int64(p))+"/s"
		}
		if a == 0 || p == 0 {
			fmt.Fprintf(b, "| %s | %s | %s | — | %.1f× | not measured |\n", c.claim, orDash(fa, a), orDash(fp, p), c.want)
			continue
		}
		x := a / p
		if c.lowerWin {
			x = p / a
		}
		met := "no"
		if c.lowerWin && x > c.want || !c.lowerWin && x >= c.want {
			met = "**yes**"
		}
		want := fmt.Sprintf("≥ %.1f×", c.want)
		if c.lowerWin {
			want = "> 1× (peer p99 ÷ passbook p99)"
		}
		fmt.Fprintf(b, "| %s | %s | %s | %.2f× | %s | %s |\n", c.claim, fa, fp, x, want, met)
	}
	b.WriteString("\n")
}

func orDash(s string, x float64) string {
	if x == 0 {
		return "—"
	}
	return s
}

// names of the systems with figures for w, in table order.
func (r *results) withFigures(w workload) []*system {
	var out []*system
	for _, s := range r.systems {
		if c := r.lookup(s.name, w); c != nil && len(c.trials) > 0 {
			out = append(out, s)
		}
	}
	return slices.Clip(out)
}

// usageTable shows what each server process cost: the time from exec to
// its first acknowledged record, its resident memory after the trial's
// workloads, and its CPU time over the trial per million records measured.
func (r *results) usageTable(b *strings.Builder) {
	var rows []string
	for _, s := range r.systems {
		us := r.usage[s.name]
		if len(us) == 0 {
			continue
		}
		var first, rss, cpu []float64
		var cpuTotal time.Duration
		for _, u := range us {
			first = append(first, u.firstProduce.Seconds())
			rss = append(rss, float64(u.rss)/(1<<20))
			cpu = append(cpu, u.cpu.Seconds())
			cpuTotal += u.cpu
		}
		perM := "—"
		if n := r.work[s.name]; n > 0 {
			perM = fmt.Sprintf("%.2f", cpuTotal.Seconds()/float64(n)*1e6)
		}
		f, m, c := summarize(first), summarize(rss), summarize(cpu)
		rows = append(rows, fmt.Sprintf("| %s | %.2f s | %s MiB | %.1f s | %s |", s.name, f.median, commas(int64(m.median)), c.median, perM))
	}
	if len(rows) == 0 {
		return
	}
	b.WriteString("### What each server costs\n\n")
	b.WriteString("Per trial, median over the trials. **Start → first record**: from exec to the first produce acknowledged with acks=all (startup, topic creation and the first fsync where there is one). **RSS**: the server's resident memory after the trial's workloads. **CPU**: the server's user + system CPU time over the trial (startup, the untimed fills and every workload); **per 1M records** divides the CPU time of all trials by all the records the workloads measured (appended, read or committed). Servers the harness does not start as one process are left out.\n\n")
	b.WriteString("| server | start → first record | RSS after the run | CPU over the trial | CPU s per 1M records |\n|---|---:|---:|---:|---:|\n")
	for _, row := range rows {
		b.WriteString(row + "\n")
	}
	b.WriteString("\n")
}
