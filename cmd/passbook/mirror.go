package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/batch"
	"github.com/passbook-log/passbook/internal/thousands"
	"github.com/passbook-log/passbook/offsets"
	"github.com/spf13/cobra"
)

// mirrorOpts are mirror's settings, checked.
type mirrorOpts struct {
	from, to, toData string
	topics           *regexp.Regexp
	groups, follow   bool
	asJSON           bool
	state            string
	rf               int16
}

func newMirrorCmd(e *env) *cobra.Command {
	var (
		o      mirrorOpts
		topics string
		rf     int
		sec    = &brokerFlags{e: e}
	)
	cmd := &cobra.Command{
		Use:   "mirror (--data DIR | --from BROKERS) (--to BROKERS | --to-data DIR)",
		Short: "Copy topics, records and consumers' offsets to a Kafka cluster, or back",
		Long: `Copy topics to another place and keep them there, with their consumers'
places: from a data directory to a Kafka cluster (--data DIR --to BROKERS),
from a Kafka cluster into a data directory (--from BROKERS --to-data DIR), or
from one cluster to another (--from BROKERS --to BROKERS: a running passbook
serve to a Kafka cluster, while producers and consumers carry on).

Each topic (all, or those whose whole name --topics matches) is created on
the target with its partition count and settings, and its records are
copied in order, partition by partition, with an idempotent producer. When
a target partition starts empty and the source's offsets are dense, the
target's offsets are the source's (the produce answers are checked, and the
summary says "identical"); otherwise (a compacted topic, records gone to
retention, a target that was not empty) the mirror keeps a source→target
offset map, and translates commits with it exactly.

With --groups it also carries every consumer's committed offsets (embedded
consumers and Kafka consumer groups alike) to the target as consumer-group
offsets, translated, and never ahead of the records they point to: a commit
past what the target has waits until the mirror has copied that far. A
group with members on the target is left alone: its commits there are its
own. A commit is carried again only when it moves on the source.

The mirror's state (the offset maps and the commits carried, fsync'd before
anything relies on them) is in --state, by default in the data directory
(DIR/mirror/…). Killed at any moment, kill -9 included, and started again
with the same ends, it resumes: it finds on the target what it wrote after
its last fsync, and writes nothing twice.

--follow keeps mirroring new records and new commits until Ctrl-C or
SIGTERM, and after a failure (the brokers gone away) it says so and tries
again. It needs a source that others write to while it runs: brokers (a
data directory is the mirror's alone while it is open; mirror a running
passbook serve with --from ITS_KAFKA_ADDRESS).

On a terminal it shows each topic's records and bytes copied and its lag
(source records not yet on the target); at the end a summary, on stdout
(--json: as JSON). See docs/scale-out.md for the road from one passbook to
a Kafka cluster.`,
		Example: `  passbook mirror --data ./passbook-data --to kafka1:9092,kafka2:9092 --groups
  passbook mirror --from localhost:9092 --to kafka1:9092 --groups --follow --state ./mirror-state
  passbook mirror --from kafka1:9092 --to-data ./dev-data --topics 'orders|payments'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			f := cmd.Flags()
			dataSet := f.Changed("data")
			switch {
			case o.from != "" && dataSet:
				return usagef("--data and --from: give one source (a data directory, or brokers)")
			case o.to != "" && o.toData != "":
				return usagef("--to and --to-data: give one target (brokers, or a data directory)")
			case o.to == "" && o.toData == "":
				return usagef("give a target: --to BROKERS (a Kafka cluster) or --to-data DIR (with --from BROKERS)")
			case o.toData != "" && o.from == "":
				return usagef("--to-data needs --from BROKERS: to copy one data directory to another, copy the directory (cp -a)")
			case o.follow && o.from == "":
				return usagef("--follow needs --from BROKERS: a data directory is the mirror's alone while it is open, so nothing new comes to it; mirror a running passbook serve with --from ITS_KAFKA_ADDRESS")
			case o.from != "" && o.to != "" && o.state == "":
				return usagef("--from and --to: give --state DIR (where the mirror keeps its offset maps; there is no data directory to keep them in)")
			case rf == 0 || rf < -1 || rf > 32767:
				return usagef("--replication-factor %d: want -1 (the cluster's default) or 1 or more", rf)
			}
			if topics != "" {
				re, err := regexp.Compile("^(?:" + topics + ")$")
				if err != nil {
					return usagef("--topics %q: %v", topics, err)
				}
				o.topics = re
			}
			o.rf = int16(rf)
			for _, side := range []string{o.from, o.to} {
				if side != "" {
					if _, err := sec.withBrokers(side).options(); err != nil {
						return err
					}
				}
			}
			return runMirror(cmd.Context(), e, sec, &o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.from, "from", "", "source: the Kafka brokers to copy from, HOST:PORT[,…] (instead of --data)")
	f.StringVar(&o.to, "to", "", "target: the Kafka brokers to copy to, HOST:PORT[,…]")
	f.StringVar(&o.toData, "to-data", "", "target: a data directory to copy into (created if needed), with --from")
	f.StringVar(&topics, "topics", "", "only the topics whose whole name matches this regular expression (default all)")
	f.BoolVar(&o.groups, "groups", false, "carry consumers' committed offsets, translated, as consumer-group offsets")
	f.BoolVar(&o.follow, "follow", false, "keep mirroring new records and commits until stopped (with --from)")
	f.BoolVar(&o.asJSON, "json", false, "print the summary as JSON")
	f.StringVar(&o.state, "state", "", "the mirror's state directory (default DIR/mirror/… of the data directory end)")
	f.IntVar(&rf, "replication-factor", -1, "replication factor of the topics created on a Kafka target (-1: the cluster's default)")
	addClientFlags(cmd, sec, "--from or --to")
	return cmd
}

// stateName is a directory name for the far end of a mirror.
func stateName(end string) string {
	return strings.NewReplacer(":", "_", ",", "+", "/", "_").Replace(strings.TrimPrefix(end, "kafka:"))
}

// mirrorInFlight is how many polls' records may be on their way to the
// target at once, unacknowledged: as a producer keeps batches in flight,
// and not a round trip a poll.
const mirrorInFlight = 8

// mirrorRetry is how long the mirror waits after a failure before
// trying again, at most; without --follow it tries mirrorTries times in
// all before it gives up.
const (
	mirrorRetry = 10 * time.Second
	mirrorTries = 5
)

// runMirror mirrors once, or with --follow until stopped, starting over
// (reconciling with the target, as after a kill) after a failure: a
// broker that timed out or went away, a connection cut.
func runMirror(ctx context.Context, e *env, sec *brokerFlags, o *mirrorOpts) error {
	began := time.Now()
	sum := &mirrorSummary{}
	wait := 250 * time.Millisecond
	for try := 1; ; try++ {
		err := mirrorOnce(ctx, e, sec, o, sum)
		var opening *mirrorOpenError
		if err == nil || (!o.follow && (try >= mirrorTries || errors.As(err, &opening))) || ctx.Err() != nil ||
			isUsage(err) || errors.Is(err, errMirrorMismatch) || errors.Is(err, errMirrorState) {
			if o.follow && ctx.Err() != nil {
				err = nil // stopped, as --follow ends
			}
			if perr := sum.print(e, o, time.Since(began)); err == nil {
				err = perr
			}
			return err
		}
		fmt.Fprintf(e.stderr, "mirror: %v; starting again in %s (Ctrl-C to stop)\n", err, wait.Round(time.Millisecond))
		select {
		case <-ctx.Done():
			if perr := sum.print(e, o, time.Since(began)); perr != nil {
				return perr
			}
			return nil
		case <-time.After(wait):
		}
		wait = min(2*wait, mirrorRetry)
	}
}

// mirrorOpenError is a failure to open an end or the state: without
// --follow it is said at once (a directory that is not there, brokers
// that refuse the login), not tried again.
type mirrorOpenError struct{ err error }

func (e *mirrorOpenError) Error() string { return e.err.Error() }
func (e *mirrorOpenError) Unwrap() error { return e.err }

func isUsage(err error) bool {
	var u usageError
	return errors.As(err, &u)
}

// mirror is one run: the two ends open, the state, the partitions.
type mirror struct {
	e     *env
	o     *mirrorOpts
	src   mirrorSource
	tgt   mirrorTarget
	st    *mirrorState
	sum   *mirrorSummary
	parts map[tp]*partMap
	heads map[tp]int64 // the source's, as last seen
	bar   *mirrorProgress
}

func openMirrorEnds(ctx context.Context, e *env, sec *brokerFlags, o *mirrorOpts) (src mirrorSource, tgt mirrorTarget, stateDir string, err error) {
	if o.from != "" {
		k, err := dialKafkaEnd(ctx, sec.withBrokers(o.from), o.rf)
		if err != nil {
			return nil, nil, "", fmt.Errorf("source: %w", err)
		}
		src = k
	} else {
		db, err := e.open()
		if err != nil {
			return nil, nil, "", fmt.Errorf("source: %w", err)
		}
		src = &dataEnd{dir: e.data, db: db}
		stateDir = filepath.Join(e.data, "mirror")
	}
	if o.to != "" {
		k, err := dialKafkaEnd(ctx, sec.withBrokers(o.to), o.rf)
		if err != nil {
			src.close()
			return nil, nil, "", fmt.Errorf("target: %w", err)
		}
		tgt = k
		stateDir = filepath.Join(stateDir, stateName(k.String()))
	} else {
		db, err := passbook.Open(o.toData, nil)
		if err != nil {
			src.close()
			return nil, nil, "", fmt.Errorf("target: %w", err)
		}
		tgt = &dataEnd{dir: o.toData, db: db}
		stateDir = filepath.Join(o.toData, "mirror", stateName(src.String()))
	}
	if o.state != "" {
		stateDir = o.state
	}
	return src, tgt, stateDir, nil
}

// mirrorOnce opens both ends and the state, reconciles, and copies
// until the source's heads (or, with --follow, until ctx ends or
// something fails).
func mirrorOnce(ctx context.Context, e *env, sec *brokerFlags, o *mirrorOpts, sum *mirrorSummary) (rerr error) {
	src, tgt, stateDir, err := openMirrorEnds(ctx, e, sec, o)
	if err != nil {
		return &mirrorOpenError{err}
	}
	defer func() {
		if err := errors.Join(src.close(), tgt.close()); err != nil && rerr == nil {
			rerr = err
		}
	}()
	st, err := openMirrorState(stateDir, src.String(), tgt.String())
	if err != nil {
		return &mirrorOpenError{err}
	}
	defer func() {
		if err := st.close(); err != nil && rerr == nil {
			rerr = err
		}
	}()
	m := &mirror{e: e, o: o, src: src, tgt: tgt, st: st, sum: sum, parts: map[tp]*partMap{}, heads: map[tp]int64{}}
	sum.source, sum.target, sum.state = src.String(), tgt.String(), stateDir

	all, err := src.topics(ctx)
	if err != nil {
		return fmt.Errorf("source: %w", err)
	}
	var topics []mirrorTopic
	for _, t := range all {
		if o.topics == nil || o.topics.MatchString(t.name) {
			topics = append(topics, t)
		}
	}
	if len(topics) == 0 {
		what := "no topics"
		if o.topics != nil {
			what = "no topic whose name matches --topics " + strings.TrimSuffix(strings.TrimPrefix(o.topics.String(), "^(?:"), ")$")
		}
		return fmt.Errorf("%s %s: nothing to mirror", src, what)
	}
	var names []string
	for _, t := range topics {
		if k, ok := tgt.(*kafkaEnd); ok && t.cfg.MaxRecordBytes > 0 {
			k.batchMax = max(k.batchMax, int32(min(t.cfg.MaxRecordBytes+64<<10, 1<<30)))
		}
		created, err := tgt.ensure(ctx, t)
		if err != nil {
			return fmt.Errorf("target: %w", err)
		}
		sum.topic(t).Created = sum.topic(t).Created || created
		names = append(names, t.name)
	}
	srcExt, err := src.extents(ctx, names)
	if err != nil {
		return fmt.Errorf("source: %w", err)
	}
	tgtExt, err := tgt.extents(ctx, names)
	if err != nil {
		return fmt.Errorf("target: %w", err)
	}
	from := map[tp]int64{}
	for _, t := range topics {
		se, te := srcExt[t.name], tgtExt[t.name]
		if se == nil || te == nil {
			return fmt.Errorf("topic %s: gone while the mirror started", t.name)
		}
		for p := range se.partitions {
			at := tp{t.name, int32(p)}
			pm, err := st.part(t.name, int32(p))
			if err != nil {
				return err
			}
			m.parts[at] = pm
			m.heads[at] = se.head[p]
			if err := m.reconcile(ctx, at, pm, te.head[p], se.start[p], t.cfg.Compacted()); err != nil {
				return err
			}
			from[at] = max(pm.covered, se.start[p])
		}
	}
	m.updateSummary()
	if err := src.start(ctx, from); err != nil {
		return fmt.Errorf("source: %w", err)
	}
	m.bar = newMirrorProgress(e, m)
	err = m.copy(ctx)
	if o.groups && (err == nil || (o.follow && ctx.Err() != nil)) {
		// The last commits, with what was copied (after Ctrl-C too: the
		// move of a consumer waits for its commit on the target).
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
		if cerr := m.carry(cctx); err == nil {
			err = cerr
		}
		cancel()
	}
	m.updateSummary()
	m.bar.finish(err)
	return err
}

// reconcile brings a partition's map up to the target: records the
// target holds past the map's end were written by a mirror killed before
// its map's fsync. They are matched, in order, with the source's from
// where the map stops (a source record compaction or retention removed
// since is passed over), so that nothing is written twice.
func (m *mirror) reconcile(ctx context.Context, at tp, pm *partMap, tgtHead, srcStart int64, compacted bool) error {
	if !pm.begun {
		if err := pm.write([]mapEntry{{mapRun: mapRun{tgt: tgtHead}}}); err != nil {
			return err
		}
		if tgtHead > 0 {
			fmt.Fprintf(m.e.stderr, "mirror: %s/%d on the target already holds records up to offset %s: the mirror's offsets there start at %s (mapped, not identical)\n",
				at.topic, at.p, thousands.Int(tgtHead), thousands.Int(tgtHead))
		}
		return nil
	}
	switch {
	case tgtHead < pm.tgtNext:
		return fmt.Errorf("%w: %s/%d on the target ends at offset %d, but the mirror wrote up to %d there (was the topic deleted and created again?); start over with another --state",
			errMirrorMismatch, at.topic, at.p, tgtHead, pm.tgtNext)
	case tgtHead == pm.tgtNext:
		return nil
	}
	extra := tgtHead - pm.tgtNext
	tgtRecs, err := m.tgt.read(ctx, at, pm.tgtNext, tgtHead)
	if err != nil {
		return fmt.Errorf("target: %w", err)
	}
	srcRecs, err := m.src.readAt(ctx, at, max(pm.covered, srcStart), int(extra))
	if err != nil {
		return fmt.Errorf("source: %w", err)
	}
	var so, to []int64
	j := 0
	for i := range tgtRecs {
		tr := &tgtRecs[i]
		if j < len(srcRecs) && sameRecord(tr, &srcRecs[j]) {
			so, to = append(so, srcRecs[j].Offset), append(to, tr.Offset)
			j++
			continue
		}
		if j >= len(srcRecs) || (!compacted && j > 0) {
			return fmt.Errorf("%w: %s/%d on the target has a record at offset %d that the mirror did not write (another producer writes to it?)",
				errMirrorMismatch, at.topic, at.p, tr.Offset)
		}
	}
	entries := runsOf(so, to, 0)
	entries = append(entries, mapEntry{mapRun: mapRun{tgt: tgtHead}, covered: pm.covered})
	if err := pm.write(entries); err != nil {
		return err
	}
	fmt.Fprintf(m.e.stderr, "mirror: %s/%d: found %s on the target written before the mirror stopped; resuming after them\n",
		at.topic, at.p, pluralInt(extra, "record"))
	return nil
}

// copy moves records until the heads (or, with --follow, until ctx
// ends), carrying commits as it goes.
//
// The next poll of the source runs while the target takes the last
// one's records (poll touches only the source's positions; write only
// the target and the maps), so that reading and writing overlap.
func (m *mirror) copy(ctx context.Context) error {
	lastCarry := time.Time{}
	lastHeads := time.Now()
	type polled struct {
		chunks []srcChunk
		err    error
	}
	pctx, cancel := context.WithCancel(ctx)
	next := make(chan polled, 1)
	inflight := false
	poll := func() {
		inflight = true
		go func() {
			c, err := m.src.poll(pctx)
			next <- polled{c, err}
		}()
	}
	var flight []*sent // sent, in order, not yet settled
	settled := true    // no settle failed: later sends may settle
	defer func() {
		cancel()
		if inflight {
			<-next
		}
		// What was acknowledged goes into the maps on the way out too,
		// in order — but nothing after a send that failed: its
		// partition's later records would cover the ones missing.
		for _, s := range flight {
			if settled {
				settled = m.settle(s) == nil
			} else {
				s.wait()
			}
		}
	}()
	poll()
	for {
		res := <-next
		inflight = false
		chunks, err := res.chunks, res.err
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			return fmt.Errorf("source: %w", err)
		}
		if len(chunks) > 0 || m.o.follow || !m.caughtUp() || len(flight) > 0 {
			poll()
		}
		if len(chunks) > 0 {
			flight = append(flight, m.send(chunks))
		}
		// Up to mirrorInFlight sends wait for their answers at once;
		// all of them once the source has nothing more for now.
		for len(flight) > mirrorInFlight || (len(chunks) == 0 && len(flight) > 0) {
			s := flight[0]
			flight = flight[1:]
			if err := m.settle(s); err != nil {
				settled = false
				return err
			}
		}
		if !m.o.follow && m.caughtUp() {
			return nil
		}
		if !m.o.follow && len(chunks) == 0 {
			if _, ok := m.src.(*dataEnd); ok {
				return nil // a data directory's poll reads to the head
			}
		}
		if m.o.follow && time.Since(lastHeads) > 2*time.Second {
			m.refreshHeads(ctx)
			lastHeads = time.Now()
		}
		if m.o.groups && m.o.follow && time.Since(lastCarry) > time.Second {
			if err := m.carry(ctx); err != nil {
				return err
			}
			lastCarry = time.Now()
		}
	}
}

// caughtUp reports whether every partition is covered to the head the
// mirror knows.
func (m *mirror) caughtUp() bool {
	for at, pm := range m.parts {
		if pm.covered < m.heads[at] {
			return false
		}
	}
	return true
}

func (m *mirror) refreshHeads(ctx context.Context) {
	var names []string
	for at := range m.parts {
		if !slices.Contains(names, at.topic) {
			names = append(names, at.topic)
		}
	}
	exts, err := m.src.extents(ctx, names)
	if err != nil {
		return // only for the lag shown; the next poll says what is wrong
	}
	for at := range m.parts {
		if ext := exts[at.topic]; ext != nil && int(at.p) < ext.partitions {
			m.heads[at] = ext.head[at.p]
		}
	}
	for _, name := range names {
		m.bar.add(name, 0, 0, m.lagOf(name))
	}
}

// sent is chunks on their way to the target.
type sent struct {
	chunks []srcChunk
	recs   map[tp][]batch.Record
	wait   func() (map[tp][]int64, error)
}

// send sends chunks to the target (a poll's: one chunk a partition).
func (m *mirror) send(chunks []srcChunk) *sent {
	recs := map[tp][]batch.Record{}
	for _, c := range chunks {
		recs[c.tp] = append(recs[c.tp], c.recs...)
	}
	return &sent{chunks: chunks, recs: recs, wait: m.tgt.send(recs)}
}

// settle waits for a send's acknowledgements and writes its map entries
// (fsync'd) before anything relies on them. Sends settle in the order
// they were made.
func (m *mirror) settle(s *sent) error {
	chunks, recs := s.chunks, s.recs
	acked, werr := s.wait()
	for _, c := range chunks {
		pm := m.parts[c.tp]
		offs := acked[c.tp]
		n := len(offs)
		all := n == len(recs[c.tp])
		src := make([]int64, 0, n)
		var bytes int64
		for i := range n {
			r := &recs[c.tp][i]
			src = append(src, r.Offset)
			bytes += int64(recordBytes(r))
		}
		coveredTo := int64(0)
		if all {
			coveredTo = c.coveredTo
		}
		if n == 0 && !all {
			continue
		}
		entries := runsOf(src, offs, coveredTo)
		if len(entries) == 0 && coveredTo > pm.covered {
			entries = []mapEntry{{mapRun: mapRun{tgt: pm.tgtNext}, covered: coveredTo}}
		}
		if err := pm.write(entries); err != nil {
			return err
		}
		m.heads[c.tp] = max(m.heads[c.tp], pm.covered)
		ts := m.sum.topics[c.topic]
		ts.Records += int64(n)
		ts.Bytes += bytes
		m.bar.add(c.topic, n, bytes, m.lagOf(c.topic))
	}
	if werr != nil {
		return fmt.Errorf("target: %w", werr)
	}
	return nil
}

// carry translates the source's commits and commits those that moved
// to the target, group by group.
func (m *mirror) carry(ctx context.Context) error {
	entries, err := m.src.commits(ctx)
	if err != nil {
		return fmt.Errorf("source commits: %w", err)
	}
	byGroup := map[string][]offsets.Entry{}
	pending := map[string]carried{}
	waiting := 0
	for _, en := range entries {
		pm := m.parts[tp{en.Topic, en.Partition}]
		if pm == nil {
			continue
		}
		t, ok := pm.translate(en.Offset)
		if !ok {
			waiting++
			continue
		}
		k := commitKey(en.Consumer, en.Topic, en.Partition)
		if c, ok := m.st.carried[k]; ok && c.Source == en.Offset {
			continue
		}
		byGroup[en.Consumer] = append(byGroup[en.Consumer], offsets.Entry{Key: en.Key, Offset: t, Metadata: en.Metadata})
		pending[k] = carried{Source: en.Offset, Target: t}
	}
	m.sum.Waiting = waiting
	groups := make([]string, 0, len(byGroup))
	for g := range byGroup {
		groups = append(groups, g)
	}
	slices.Sort(groups)
	changed := false
	for _, g := range groups {
		err := m.tgt.commit(ctx, g, byGroup[g])
		if errors.Is(err, errLiveMembers) {
			if !slices.Contains(m.sum.Live, g) {
				m.sum.Live = append(m.sum.Live, g)
				fmt.Fprintf(m.e.stderr, "mirror: consumer group %s has members on the target: its commits there are its own, and the mirror leaves them alone\n", g)
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("target: %w", err)
		}
		for _, en := range byGroup[g] {
			k := commitKey(g, en.Topic, en.Partition)
			m.st.carried[k] = pending[k]
			m.sum.Carried++
			changed = true
		}
	}
	if changed {
		return m.st.saveCarried()
	}
	return nil
}

// mirrorSummary is what a mirror did, over all its runs (with --follow,
// each try after a failure is a run).
type mirrorSummary struct {
	source, target, state string
	order                 []string
	topics                map[string]*mirrorTopicSummary
	Carried               int
	Waiting               int
	Live                  []string
	commits               []mirrorCommitJSON
}

type mirrorTopicSummary struct {
	Name       string                   `json:"name"`
	Partitions []mirrorPartitionSummary `json:"partitions"`
	Created    bool                     `json:"created"`
	Records    int64                    `json:"records"`
	Bytes      int64                    `json:"bytes"`
}

type mirrorPartitionSummary struct {
	Partition int32 `json:"partition"`
	// Identical: every record mirrored has the same offset on the target.
	Identical  bool  `json:"identical"`
	SourceHead int64 `json:"source_head"`
	Covered    int64 `json:"covered"`
	TargetNext int64 `json:"target_next"`
	Lag        int64 `json:"lag"`
}

type mirrorCommitJSON struct {
	Group        string `json:"group"`
	Topic        string `json:"topic"`
	Partition    int32  `json:"partition"`
	SourceOffset int64  `json:"source_offset"`
	TargetOffset int64  `json:"target_offset"`
}

func (s *mirrorSummary) topic(t mirrorTopic) *mirrorTopicSummary {
	if s.topics == nil {
		s.topics = map[string]*mirrorTopicSummary{}
	}
	ts := s.topics[t.name]
	if ts == nil {
		ts = &mirrorTopicSummary{Name: t.name}
		s.topics[t.name] = ts
		s.order = append(s.order, t.name)
		slices.Sort(s.order)
	}
	return ts
}

// updateSummary takes each partition's state into the summary.
func (m *mirror) updateSummary() {
	for _, ts := range m.sum.topics {
		ts.Partitions = ts.Partitions[:0]
	}
	ats := make([]tp, 0, len(m.parts))
	for at := range m.parts {
		ats = append(ats, at)
	}
	slices.SortFunc(ats, func(a, b tp) int {
		if c := strings.Compare(a.topic, b.topic); c != 0 {
			return c
		}
		return int(a.p - b.p)
	})
	for _, at := range ats {
		pm := m.parts[at]
		ts := m.sum.topics[at.topic]
		ts.Partitions = append(ts.Partitions, mirrorPartitionSummary{Partition: at.p, Identical: pm.identical(),
			SourceHead: m.heads[at], Covered: pm.covered, TargetNext: pm.tgtNext, Lag: max(0, m.heads[at]-pm.covered)})
	}
	m.sum.commits = m.sum.commits[:0]
	for k, c := range m.st.carried {
		parts := strings.Split(k, "\x00")
		if len(parts) != 3 {
			continue
		}
		var p int32
		fmt.Sscan(parts[2], &p)
		if m.parts[tp{parts[1], p}] == nil {
			continue
		}
		m.sum.commits = append(m.sum.commits, mirrorCommitJSON{Group: parts[0], Topic: parts[1], Partition: p, SourceOffset: c.Source, TargetOffset: c.Target})
	}
	slices.SortFunc(m.sum.commits, func(a, b mirrorCommitJSON) int {
		return strings.Compare(fmt.Sprintf("%s\x00%s\x00%09d", a.Group, a.Topic, a.Partition), fmt.Sprintf("%s\x00%s\x00%09d", b.Group, b.Topic, b.Partition))
	})
}

// print writes the summary: a table on stdout, or JSON.
func (s *mirrorSummary) print(e *env, o *mirrorOpts, took time.Duration) error {
	if s.topics == nil {
		return nil // nothing began
	}
	if o.asJSON {
		out := struct {
			Source  string                `json:"source"`
			Target  string                `json:"target"`
			State   string                `json:"state"`
			Seconds float64               `json:"seconds"`
			Topics  []*mirrorTopicSummary `json:"topics"`
			Commits []mirrorCommitJSON    `json:"commits"`
			Waiting int                   `json:"commits_waiting"`
			Live    []string              `json:"groups_live_on_target"`
		}{Source: s.source, Target: s.target, State: s.state, Seconds: took.Seconds(), Commits: s.commits, Waiting: s.Waiting, Live: s.Live}
		if out.Commits == nil {
			out.Commits = []mirrorCommitJSON{}
		}
		if out.Live == nil {
			out.Live = []string{}
		}
		for _, name := range s.order {
			out.Topics = append(out.Topics, s.topics[name])
		}
		return writeJSON(e, out)
	}
	var records, bytes int64
	for _, ts := range s.topics {
		records += ts.Records
		bytes += ts.Bytes
	}
	fmt.Fprintf(e.stdout, "mirrored %s (%s) from %s to %s in %s\n", pluralInt(records, "record"), byteSize(float64(bytes)),
		strings.TrimPrefix(s.source, "data:"), strings.TrimPrefix(s.target, "data:"), took.Round(time.Millisecond))
	w := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "TOPIC\tPARTITIONS\tRECORDS\tBYTES\tOFFSETS\tLAG")
	for _, name := range s.order {
		ts := s.topics[name]
		same, lag := 0, int64(0)
		for _, p := range ts.Partitions {
			if p.Identical {
				same++
			}
			lag += p.Lag
		}
		how := "identical"
		switch {
		case same == 0:
			how = "mapped"
		case same < len(ts.Partitions):
			how = fmt.Sprintf("mapped (%d of %d identical)", same, len(ts.Partitions))
		}
		if ts.Created {
			how += ", created"
		}
		fmt.Fprintf(w, "%s\t%d\t%s\t%s\t%s\t%s\n", name, len(ts.Partitions), thousands.Int(ts.Records), byteSize(float64(ts.Bytes)), how, thousands.Int(lag))
	}
	w.Flush()
	if o.groups {
		fmt.Fprintf(e.stdout, "commits: %s carried to the target", plural(s.Carried, "commit"))
		if s.Waiting > 0 {
			fmt.Fprintf(e.stdout, ", %d waiting for their records", s.Waiting)
		}
		if len(s.Live) > 0 {
			fmt.Fprintf(e.stdout, "; left alone (members on the target): %s", strings.Join(s.Live, ", "))
		}
		fmt.Fprintln(e.stdout)
	}
	fmt.Fprintf(e.stdout, "state: %s\n", s.state)
	return nil
}
