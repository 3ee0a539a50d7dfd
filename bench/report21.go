package main

import (
	"fmt"
	"slices"
	"strings"
)

// The report's parts for issue 21: its targets, the figures as fractions
// of this machine's limits, the open times, the server's CPU per MB
// fetched and storage.Log against tidwall/wal at 1 and 16 appenders.

// pbBaseline is the optional second passbook serve (--baseline-passbook),
// the old path that the replay's CPU per MB is compared with.
const pbBaseline = "passbook (Kafka protocol, baseline)"

// claim21 is one row of issue 21's targets table.
type claim21 struct {
	what     string
	measured string // the figure
	against  string // what it is compared with
	ratio    float64
	ratioFmt string // how ratio is shown; "" for "%.2f×"
	target   string
	met      string // "**yes**", "no", or why not measured
}

func metIf(ok bool) string {
	if ok {
		return "**yes**"
	}
	return "no"
}

// cpuPerMB is a system's server CPU time per MB (10⁶ B) of record values
// fetched by the replay, in seconds, per trial.
func (r *results) cpuPerMB(name string) []float64 {
	c := r.lookup(name, wReplay)
	if c == nil {
		return nil
	}
	var xs []float64
	for _, m := range c.trials {
		if m.bytes > 0 && m.serverCPU > 0 {
			xs = append(xs, m.serverCPU.Seconds()/(float64(m.bytes)/1e6))
		}
	}
	return xs
}

func (r *results) medianCPUPerMB(name string) float64 {
	if xs := r.cpuPerMB(name); len(xs) > 0 {
		return summarize(xs).median
	}
	return 0
}

// medianElapsed is the median time of a system on a workload, in
// seconds, or 0.
func (r *results) medianElapsed(name string, w workload) float64 {
	c := r.lookup(name, w)
	if c == nil || len(c.trials) == 0 {
		return 0
	}
	var xs []float64
	for _, m := range c.trials {
		xs = append(xs, m.elapsed.Seconds())
	}
	return summarize(xs).median
}

func (r *results) ran(w workload) bool {
	return r.lookup(pbKafka, w) != nil || r.lookup(pbEmbedded, w) != nil
}

func (r *results) targets21(b *strings.Builder) {
	p := r.h.p
	var rows []claim21
	rate := func(x float64) string { return commas(int64(x)) + "/s" }
	ratioRow := func(what string, a, bb float64, against string, want float64) {
		row := claim21{what: what, measured: orDash(rate(a), a), against: against + ": " + orDash(rate(bb), bb), target: fmt.Sprintf("≥ %.2g×", want)}
		if a == 0 || bb == 0 {
			row.met = "not measured"
		} else {
			row.ratio = a / bb
			row.met = metIf(row.ratio >= want)
		}
		rows = append(rows, row)
	}
	if r.ran(wAcksMany) && r.ran(wAcks1) {
		ratioRow(fmt.Sprintf("acks=all over %s partitions ≥ 0.5× acks=all over one partition (passbook serve)", commas(int64(p.partitions))),
			r.median(pbKafka, wAcksMany), r.median(pbKafka, wAcks1), "1 partition", 0.5)
	}
	if r.ran(wAcksMany) {
		ratioRow(fmt.Sprintf("acks=all over %s partitions ≥ kfake (in memory) at %[1]s partitions", commas(int64(p.partitions))),
			r.median(pbKafka, wAcksMany), r.median(kfakeMemoryName, wAcksMany), "kfake", 1)
	}
	if r.ran(wDefaults) {
		ratioRow("Kafka produce with franz-go's default producer settings ≥ 0.9× kfake (in memory)",
			r.median(pbKafka, wDefaults), r.median(kfakeMemoryName, wDefaults), "kfake", 0.9)
	}
	if r.ran(wKiBDurable) {
		for _, name := range []string{pbKafka, pbEmbedded} {
			what := "1 KiB records, acks=all (fsync), ≥ 90% of the disk's buffered+fdatasync bandwidth (Kafka protocol)"
			if name == pbEmbedded {
				what = "1 KiB records, Fsync, ≥ 90% of the disk's buffered+fdatasync bandwidth (embedded)"
			}
			x := r.median(name, wKiBDurable) * 1024
			row := claim21{what: what, measured: orDash(mbps(x), x), target: "≥ 90%", ratioFmt: "%.0f%%"}
			switch {
			case r.limits == nil:
				row.against, row.met = "—", "not measured (--skip-limits)"
			case x == 0:
				row.against, row.met = mbps(r.limits.seqBytesPerS.median), "not measured"
			default:
				row.against = "the disk: " + mbps(r.limits.seqBytesPerS.median)
				row.ratio = 100 * x / r.limits.seqBytesPerS.median
				row.met = metIf(row.ratio >= 90)
			}
			rows = append(rows, row)
		}
	}
	if r.ran(wReplay) && r.lookup(pbKafka, wReplay) != nil {
		pb, kf, base := r.medianCPUPerMB(pbKafka), r.medianCPUPerMB(kfakeMemoryName), r.medianCPUPerMB(pbBaseline)
		cpu := func(x float64) string { return orDash(fmt.Sprintf("%.2f ms/MB", x*1e3), x) }
		row := claim21{what: "server CPU per MB fetched by a replay: −40% against the old path (≤ 0.6× the baseline binary)", measured: cpu(pb), target: "≤ 0.60×"}
		switch {
		case base == 0:
			row.against, row.met = "old path: no --baseline-passbook given", "not measured here"
		case pb == 0:
			row.against, row.met = "baseline: "+cpu(base), "not measured"
		default:
			row.against, row.ratio = "baseline: "+cpu(base), pb/base
			row.met = metIf(row.ratio <= 0.6)
		}
		rows = append(rows, row)
		row = claim21{what: "server CPU per MB fetched by a replay, against kfake (in memory)", measured: cpu(pb), target: "(no target: for scale)", met: "—"}
		row.against = "kfake: " + cpu(kf)
		if pb > 0 && kf > 0 {
			row.ratio = pb / kf
		}
		rows = append(rows, row)
	}
	for _, w := range []workload{wOpenSmall, wOpenLarge} {
		if !r.ran(w) {
			continue
		}
		n := p.openPartitions(w)
		want := map[int]float64{1000: 0.5, 10_000: 3}[n]
		x := r.medianElapsed(pbKafka, w)
		row := claim21{what: fmt.Sprintf("open of passbook serve over %s partitions after a clean stop (exec → ready)", commas(int64(n))),
			measured: orDash(nanos(x), x), against: "—", ratio: -1}
		switch {
		case want == 0:
			row.target, row.met = "(targets are set at 1,000 and 10,000 partitions)", "—"
		case x == 0:
			row.target, row.met = fmt.Sprintf("< %g s", want), "not measured"
		default:
			row.target, row.met = fmt.Sprintf("< %g s", want), metIf(x < want)
		}
		rows = append(rows, row)
	}
	if len(r.appenders["passbook"]) > 0 {
		for _, k := range []int{1, 16} {
			a, w := r.appenders.median("passbook", k), r.appenders.median("wal", k)
			what := "single-record InOS appends, one appender: storage.Log ≥ 1.5× tidwall/wal"
			if k > 1 {
				what = fmt.Sprintf("single-record InOS appends, %d appenders on one log: storage.Log ≥ 1.5× tidwall/wal", k)
			}
			ratioRow(what, a, w, "tidwall/wal", 1.5)
			if k == 16 {
				row := claim21{what: "single-record InOS appends, 16 appenders: storage.Log ≥ 3 M records/s", measured: orDash(rate(a), a), against: "—", ratio: -1, target: "≥ 3,000,000/s"}
				row.met = metIf(a >= 3e6)
				if a == 0 {
					row.met = "not measured"
				}
				rows = append(rows, row)
			}
		}
	}
	if len(rows) == 0 {
		return
	}
	b.WriteString("### The targets of issue 21\n\n")
	b.WriteString("Each a ratio of two figures of this run (or a time, for the opens), against the peer or baseline the issue names.\n\n")
	b.WriteString("| target | measured | against | ratio | target | met |\n|---|---:|---:|---:|---:|---|\n")
	for _, row := range rows {
		ratio := "—"
		switch {
		case row.ratio < 0 || row.ratio == 0:
		case row.ratioFmt != "":
			ratio = fmt.Sprintf(row.ratioFmt, row.ratio)
		default:
			ratio = fmt.Sprintf("%.2f×", row.ratio)
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s |\n", esc(row.what), row.measured, esc(row.against), ratio, row.target, row.met)
	}
	b.WriteString("\n")
}

// limitsTable gives the workloads bound by one of the machine's limits
// as fractions of the ceiling that limit sets.
func (r *results) limitsTable(b *strings.Builder) {
	l := r.limits
	if l == nil {
		return
	}
	p := r.h.p
	type row struct {
		w       workload
		what    string
		limit   string
		ceiling float64   // records/s
		extraX  []float64 // for w < 0: the embedded figure
	}
	batch := float64(p.batch)
	rows := []row{
		{w: wSingle, what: "1. one record at a time (InOS)", limit: "one write(2) of 170 B per record", ceiling: 1 / l.write1.median},
		{w: wBatch, what: "2. batches of " + commas(int64(p.batch)), limit: "one write(2) of 16 × 170 B, per record", ceiling: 1 / l.write16.median},
		{w: wDurable, what: "3. batches of " + commas(int64(p.batch)) + ", fsync", limit: fmt.Sprintf("one fdatasync per %s records", commas(int64(p.batch))), ceiling: batch / l.fsync.median},
		{w: wKiBDurable, what: "1 KiB records, fsync", limit: "buffered+fdatasync bandwidth ÷ 1 KiB", ceiling: l.seqBytesPerS.median / 1024},
		{w: wAcksMany, what: fmt.Sprintf("acks=all over %s partitions", commas(int64(p.partitions))),
			limit:   fmt.Sprintf("every partition's fdatasync per window of %s, at the per-file cost of 64 in parallel", commas(int64(p.manyWindow()))),
			ceiling: float64(p.manyWindow()) / (float64(p.partitions) * l.fsyncPar[64].median)},
	}
	for _, a := range []struct {
		sys, what, limit string
		k                int
		ceiling          float64
	}{
		{"passbook", "storage.Log, one appender (InOS, mapped)", "first touch of a fresh mapped page, per 170 B record", 1, 1 / l.touchRecord.median},
		{"passbook", "storage.Log, 16 appenders (InOS, mapped)", "first touch of a fresh mapped page, per 170 B record", 16, 1 / l.touchRecord.median},
		{"passbook-write2", "storage.Log on write(2), one appender (InOS)", "one write(2) of 170 B per record", 1, 1 / l.write1.median},
	} {
		if x := r.appenders.median(a.sys, a.k); x > 0 {
			rows = append(rows, row{w: -1, what: a.what, limit: a.limit, ceiling: a.ceiling, extraX: []float64{x}})
		}
	}
	var out []string
	for _, ro := range rows {
		var cells []string
		if ro.w >= 0 {
			if !slices.Contains(r.h.workloads, ro.w) {
				continue
			}
			for _, name := range []string{pbEmbedded, pbKafka} {
				x := r.median(name, ro.w)
				if x == 0 {
					cells = append(cells, "—", "—")
					continue
				}
				cells = append(cells, commas(int64(x))+"/s", fmt.Sprintf("%.2f", x/ro.ceiling))
			}
		} else {
			x := ro.extraX[0]
			cells = append(cells, commas(int64(x))+"/s", fmt.Sprintf("%.2f", x/ro.ceiling), "—", "—")
		}
		out = append(out, fmt.Sprintf("| %s | %s | %s/s | %s |", ro.what, ro.limit, commas(int64(ro.ceiling)), strings.Join(cells, " | ")))
	}
	if len(out) == 0 {
		return
	}
	b.WriteString("### Against this machine's limits\n\n")
	b.WriteString("The ceiling is the rate a path paying the limit once per record (or per batch, or per partition and window) could reach on this machine, from the limits measured at the start of this run; the fractions are passbook's median over it. Above 1, the path does not pay that cost per record (it batches, or maps the file).\n\n")
	b.WriteString("| workload | bound by | ceiling | passbook embedded | fraction | passbook Kafka | fraction |\n|---|---|---:|---:|---:|---:|---:|\n")
	for _, o := range out {
		b.WriteString(o + "\n")
	}
	b.WriteString("\n")
}

// openTable shows the open times.
func (r *results) openTable(b *strings.Builder, w workload) {
	b.WriteString("| system | what is timed | open time | partitions |\n|---|---|---:|---:|\n")
	for _, s := range r.systems {
		if !r.shown(s, w) {
			continue
		}
		c := r.lookup(s.name, w)
		if st := c.status(); st != "" {
			fmt.Fprintf(b, "| %s | %s |  |  |\n", s.name, esc(st))
			continue
		}
		var xs []float64
		for _, m := range c.trials {
			xs = append(xs, m.elapsed.Seconds())
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s |\n", s.name, esc(s.durability(w)), summarize(xs).duration(), commas(int64(c.trials[0].records)))
	}
	fmt.Fprintf(b, "\nA first `passbook serve` creates a topic of %s partitions, produces a record to each and stops on SIGTERM (its clean shutdown), once per run; in every trial another is started on that data directory, timed from exec until it answers a Metadata request listing every partition, and stopped by SIGTERM too (its exit status checked), so each open follows a clean stop. The page cache holds what the last server wrote or read.\n",
		commas(int64(r.h.p.openPartitions(w))))
}

// fetchCPUTable shows the servers' CPU per MB fetched by the replay.
func (r *results) fetchCPUTable(b *strings.Builder) {
	kf := r.medianCPUPerMB(kfakeMemoryName)
	var rows []string
	for _, s := range r.systems {
		xs := r.cpuPerMB(s.name)
		if len(xs) == 0 {
			// A replay too short for the 10 ms tick of /proc/PID/stat,
			// where there is no schedstat: say so rather than print nothing.
			if c := r.lookup(s.name, wReplay); c != nil && len(c.trials) > 0 && c.trials[0].bytes > 0 {
				rows = append(rows, fmt.Sprintf("| %s | under one 10 ms tick over %.1f MB | — |", s.name, float64(c.trials[0].bytes)/1e6))
			}
			continue
		}
		st := summarize(xs)
		f := func(x float64) string { return fmt.Sprintf("%.2f", x*1e3) }
		fig := f(st.median) + " ms"
		if st.min != st.max {
			fig = fmt.Sprintf("%s ms (%s–%s)", f(st.median), f(st.min), f(st.max))
		}
		rows = append(rows, fmt.Sprintf("| %s | %s | %s |", s.name, fig, ratio(st.median, kf)))
	}
	if len(rows) == 0 {
		return
	}
	b.WriteString("\nThe server's CPU per MB fetched by this replay: the server process's CPU time (the time on CPU of its threads, summed from /proc/PID/task/*/schedstat in nanoseconds; /proc/PID/stat's 10 ms ticks are too coarse for a replay that costs a few tens of milliseconds) read just before and just after the replay, over the MB (10⁶ B) of record values fetched. kfake runs in a child process of the harness (its `_kfake` command), measured the same way.\n\n")
	b.WriteString("| server | CPU per MB fetched | ÷ kfake's |\n|---|---:|---:|\n")
	for _, row := range rows {
		b.WriteString(row + "\n")
	}
}

// appendersTable shows storage.Log against tidwall/wal at 1 and 16
// appenders.
func (r *results) appendersTable(b *strings.Builder) {
	if len(r.appenders["passbook"]) == 0 && r.appendersErr == "" {
		return
	}
	fmt.Fprintf(b, "### storage.Log vs tidwall/wal: %s InOS appends, single records from 1 and 16 appenders, and batches\n\n", commas(int64(r.h.p.n)))
	if r.appendersErr != "" {
		fmt.Fprintf(b, "A trial failed: %s\n\n", esc(r.appendersErr))
	}
	b.WriteString("| appenders | storage.Log records/s | storage.Log on write(2) (baseline) | tidwall/wal records/s | storage.Log ÷ wal | storage.Log ÷ on write(2) |\n|---|---:|---:|---:|---:|---:|\n")
	for _, k := range appenderCounts {
		pb, w2, wl := r.appenders["passbook"][k], r.appenders["passbook-write2"][k], r.appenders["wal"][k]
		if len(pb) == 0 || len(wl) == 0 {
			continue
		}
		fw2 := "—"
		if len(w2) > 0 {
			fw2 = summarize(w2).rate()
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s |\n", appendersLabel(k), summarize(pb).rate(), fw2, summarize(wl).rate(),
			ratio(summarize(pb).median, summarize(wl).median), ratio(summarize(pb).median, r.appenders.median("passbook-write2", k)))
	}
	b.WriteString("\nOne appender is bench/wal.go's workloads (b) and (b′): storage.Log Append of one record with InOS durability — through the active segment's shared mapping where the file system can map, and on write(2) with the mapping hidden (vfs.WithoutMapping), the old path — against tidwall/wal Write with NoSync. With 16, the goroutines share one log: storage.Log's Append is safe for concurrent use; tidwall/wal's entries are numbered by the caller and must come in order, so each goroutine takes the next number and writes it under one mutex. The last row: one appender, Append of 1,000 records (wal: WriteBatch of 1,000, NoSync), the mapped path against write(2) for batches. Each system in a fresh directory; the order alternates between trials.\n\n")
}

// method21 says how issue 21's workloads run, under the tables.
func method21(p params) string {
	return fmt.Sprintf(`- **1 KiB, fsync** (issue 21): as 3 with 1 KiB values; the fraction is the rate in bytes of values over the disk's buffered+fdatasync bandwidth measured at the start.
- **franz-go's defaults** (issue 21): a client with nothing set but the seed broker (idempotent, acks=all, 10 ms linger, snappy where it shrinks a batch, 50,000 buffered records) produces as fast as Produce takes the records, to a topic of one partition, then waits for every acknowledgement.
- **acks=all over 1 and %[1]s partitions** (issue 21): the same total of records, acks=all, in windows of %[2]s unacknowledged records (ten a partition of the many; round robin over the partitions), each window acknowledged before the next; a record to every partition first, untimed.
- **open** (issue 21): passbook serve only; see under its tables.
`, commas(int64(p.partitions)), commas(int64(p.manyWindow())))
}
