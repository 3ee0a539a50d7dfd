package passbook

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/passbook-log/passbook/internal/layout"
	"github.com/passbook-log/passbook/offsets"
	"github.com/passbook-log/passbook/storage"
	"github.com/passbook-log/passbook/vfs"
)

// Problem kinds of a data directory, besides the partitions' own (see
// storage.ProblemKind).
const (
	// ProblemTopic: a topic.json that Open cannot read, or a partition
	// directory missing (Open would create it empty and reuse its
	// offsets).
	ProblemTopic storage.ProblemKind = "topic"
	// ProblemOffsetStore: the offset store fails SQLite's integrity
	// check, cannot be read, or holds a committed offset past its
	// partition's head.
	ProblemOffsetStore storage.ProblemKind = "offset store"
)

// CheckOptions configure Verify and Repair. A nil or zero CheckOptions is
// valid.
type CheckOptions struct {
	// FS holds the topics' logs (default: the OS).
	FS vfs.FS
	// OffsetsFS holds offsets.db (default: the OS, as with Open unless
	// Options.Offsets.FS says otherwise).
	OffsetsFS vfs.FS
	// Progress, if set, is called now and then with the segment bytes
	// checked so far and in all.
	Progress func(done, total int64)
	// DryRun makes Repair report what it would do, and do nothing.
	DryRun bool
	// Now names the files Repair moves aside; default time.Now.
	Now func() time.Time
}

// PartitionCheck is what Verify or Repair found in one partition.
type PartitionCheck struct {
	Topic     string
	Partition int32
	Report    *storage.VerifyReport // what Verify found (for Repair: before)
	Repair    *storage.RepairReport // what Repair did; nil for Verify
}

// CheckReport is what Verify or Repair found in a data directory.
type CheckReport struct {
	Dir        string
	Topics     int
	Partitions []PartitionCheck
	// Offsets is the number of committed offsets checked.
	Offsets int
	// Problems are the data directory's own: topics and the offset store.
	// Each partition's are in its report.
	Problems []storage.Problem
	Notes    []string
	// Actions are what Repair did to the offset store.
	Actions []storage.RepairAction
}

// AllProblems lists every problem found: the data directory's, then each
// partition's in order. After Repair, it lists what is still wrong.
func (r *CheckReport) AllProblems() []storage.Problem {
	ps := slices.Clone(r.Problems)
	for _, p := range r.Partitions {
		rep := p.Report
		if p.Repair != nil && p.Repair.After != nil {
			rep = p.Repair.After
		}
		ps = append(ps, rep.Problems...)
	}
	return ps
}

// OK reports whether nothing is wrong.
func (r *CheckReport) OK() bool { return len(r.AllProblems()) == 0 }

// Verify checks the data directory dir, which must not be open (it takes
// the directory's lock; a running server holds it): every partition of
// every topic with storage.Verify, every topic's configuration, and the
// offset store — SQLite's integrity check, and every committed offset
// within its partition's [0, head]. The error is for a directory it could
// not check at all.
func Verify(dir string, opts *CheckOptions) (*CheckReport, error) {
	return check(dir, opts, false)
}

// Repair fixes what it can of the data directory dir, which must not be
// open: every partition with storage.Repair (which never deletes data:
// what it takes out of a log it moves aside), and every committed offset
// past its partition's head, set to the head (it was committed for
// records a crash or a repair took out of the log; the consumer goes on
// with the records appended from there). It cannot repair an offset
// store that fails SQLite's integrity check: that stays a problem.
func Repair(dir string, opts *CheckOptions) (*CheckReport, error) {
	return check(dir, opts, true)
}

// partDir is one partition directory to check.
type partDir struct {
	topic string
	p     int32
	dir   string
}

func check(dir string, opts *CheckOptions, repair bool) (*CheckReport, error) {
	var o CheckOptions
	if opts != nil {
		o = *opts
	}
	if o.FS == nil {
		o.FS = vfs.OS()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.OffsetsFS == nil {
		o.OffsetsFS = vfs.OS()
	}
	verb := "verify"
	if repair {
		verb = "repair"
	}
	if _, err := o.FS.Stat(layout.TopicsDir(dir)); errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w at %s", ErrNoDataDir, dir)
	} else if err != nil {
		return nil, fmt.Errorf("passbook: %s %s: not a data directory: %w", verb, dir, err)
	}
	lock, err := o.FS.Lock(layout.LockFile(dir))
	if err != nil {
		var le *vfs.LockedError
		if errors.As(err, &le) {
			return nil, fmt.Errorf("passbook: %s %s: the data directory is in use by process %d; stop it first: %w", verb, dir, le.PID, err)
		}
		if errors.Is(err, fs.ErrPermission) {
			return nil, fmt.Errorf("passbook: %s %s: the data directory is not writable by this user: %s takes its lock (%s) so that no process writes while it reads; run as the directory's owner, or copy it (cp -a) and %s the copy: %w",
				verb, dir, verb, layout.LockFile(dir), verb, err)
		}
		return nil, fmt.Errorf("passbook: %s %s: %w", verb, dir, err)
	}
	defer lock.Close()
	r := &CheckReport{Dir: dir}
	parts, counts, err := listPartitions(o.FS, dir, r)
	if err != nil {
		return nil, fmt.Errorf("passbook: %s %s: %w", verb, dir, err)
	}
	var total, done int64
	for _, pd := range parts {
		total += logBytes(o.FS, pd.dir)
	}
	progress := func(n int64) {
		done += n
		if o.Progress != nil {
			o.Progress(done, total)
		}
	}
	heads := map[string][]int64{} // −1: not known
	for topic, n := range counts {
		heads[topic] = slices.Repeat([]int64{-1}, n)
	}
	for _, pd := range parts {
		pc := PartitionCheck{Topic: pd.topic, Partition: pd.p}
		var extent *storage.VerifyReport
		if repair {
			rep, err := storage.Repair(pd.dir, &storage.RepairOptions{FS: o.FS, DryRun: o.DryRun, Now: o.Now, Progress: progress})
			if rep == nil {
				return nil, fmt.Errorf("passbook: %s %s: %w", verb, dir, err)
			}
			pc.Report, pc.Repair = rep.Before, rep
			extent = &storage.VerifyReport{Start: rep.Start, Head: rep.Head}
			if err != nil {
				r.Problems = append(r.Problems, storage.Problem{Kind: storage.ProblemFile, File: pd.dir, Pos: -1, Detail: err.Error()})
			}
		} else {
			rep, err := storage.Verify(pd.dir, &storage.VerifyOptions{FS: o.FS, Progress: progress})
			if err != nil {
				return nil, fmt.Errorf("passbook: %s %s: %w", verb, dir, err)
			}
			pc.Report, extent = rep, rep
		}
		r.Partitions = append(r.Partitions, pc)
		heads[pd.topic][pd.p] = extent.Head
	}
	checkOffsets(o.FS, o.OffsetsFS, layout.OffsetsFile(dir), heads, r, repair, o.DryRun)
	checkStoreIdentity(o.FS, o.OffsetsFS, dir, r)
	return r, nil
}

// topicIDOnDisk is a topic's name and the ID its topic.json records.
type topicIDOnDisk struct{ name, id string }

// topicIDsOnDisk lists the topics under dir whose topic.json reads and
// records an ID, in the order of the topics directory; a topic.json that
// is missing, unreadable or without an ID is left out.
func topicIDsOnDisk(fsys vfs.FS, dir string) []topicIDOnDisk {
	var out []topicIDOnDisk
	names, _ := fsys.ReadDir(layout.TopicsDir(dir))
	for _, name := range names {
		b, err := vfs.ReadFile(fsys, layout.TopicConfig(dir, name))
		var tf topicFile
		if err == nil && unmarshalTopic(b, &tf) == nil && tf.ID != "" {
			out = append(out, topicIDOnDisk{name, tf.ID})
		}
	}
	return out
}

// checkStoreIdentity reports an offset store that is not the one the
// topics were bound in: each topic's ID (in its topic.json) goes into the
// store when the topic is created, or first opened with IDs, so a missing
// store, or one that knows no topic, while topics have IDs, was deleted,
// replaced or truncated — and every committed offset with it.
func checkStoreIdentity(fsys, offsetsFS vfs.FS, dir string, r *CheckReport) {
	var withIDs []string
	for _, t := range topicIDsOnDisk(fsys, dir) {
		withIDs = append(withIDs, t.name)
	}
	if len(withIDs) == 0 {
		return
	}
	path := layout.OffsetsFile(dir)
	lost := func(what string) {
		r.Problems = append(r.Problems, storage.Problem{Kind: ProblemOffsetStore, File: path, Pos: -1,
			Detail: fmt.Sprintf("%s, but topics %s were bound in one: it was deleted, replaced or truncated, and every committed offset is lost (restore it from a backup to get them back; otherwise consumers start where their reset policy says)",
				what, strings.Join(withIDs, ", "))})
	}
	if _, err := offsetsFS.Stat(path); errors.Is(err, fs.ErrNotExist) {
		lost("offsets.db does not exist")
		return
	}
	if n, known := offsets.BoundTopics(offsetsFS, path); known && n == 0 {
		lost("offsets.db knows no topic")
	}
}

// listPartitions lists the partition directories of every topic in dir,
// noting and reporting what Open would refuse or clean up, and the number
// of partitions of each topic.
func listPartitions(fsys vfs.FS, dir string, r *CheckReport) ([]partDir, map[string]int, error) {
	names, err := fsys.ReadDir(layout.TopicsDir(dir))
	if err != nil {
		return nil, nil, err
	}
	var parts []partDir
	counts := map[string]int{}
	for _, name := range names {
		tdir := layout.TopicDir(dir, name)
		if ValidTopicName(name) != nil {
			r.Notes = append(r.Notes, fmt.Sprintf("%s is not a topic (a deletion or creation a crash interrupted: Open removes it)", tdir))
			continue
		}
		b, err := vfs.ReadFile(fsys, layout.TopicConfig(dir, name))
		if errors.Is(err, fs.ErrNotExist) {
			r.Notes = append(r.Notes, fmt.Sprintf("%s has no topic.json (a creation a crash interrupted: Open removes it)", tdir))
			continue
		}
		var tf topicFile
		if err == nil {
			err = unmarshalTopic(b, &tf)
		}
		if err == nil {
			err = tf.Config.validate()
		}
		if err != nil {
			r.Problems = append(r.Problems, storage.Problem{Kind: ProblemTopic, File: layout.TopicConfig(dir, name), Pos: -1, Detail: err.Error() + "; Open refuses the data directory"})
			continue
		}
		r.Topics++
		counts[name] = tf.Config.Partitions
		entries, _ := fsys.ReadDir(tdir)
		for p := range tf.Config.Partitions {
			pdir := layout.PartitionDir(dir, name, p)
			if !slices.Contains(entries, strconv.Itoa(p)) {
				r.Problems = append(r.Problems, storage.Problem{Kind: ProblemTopic, File: pdir, Pos: -1,
					Detail: fmt.Sprintf("partition %d of topic %s is missing: Open would create it empty and reuse its offsets", p, name)})
				continue
			}
			parts = append(parts, partDir{topic: name, p: int32(p), dir: pdir})
		}
		for _, e := range entries {
			if n, err := strconv.Atoi(e); err == nil && n >= tf.Config.Partitions {
				r.Notes = append(r.Notes, fmt.Sprintf("%s is not one of the topic's %d partitions", filepath.Join(tdir, e), tf.Config.Partitions))
			}
		}
	}
	return parts, counts, nil
}

// logBytes is the size of a partition's segment files, for progress.
func logBytes(fsys vfs.FS, dir string) int64 {
	names, _ := fsys.ReadDir(dir)
	var n int64
	for _, name := range names {
		if strings.HasSuffix(name, ".log") {
			if fi, err := fsys.Stat(filepath.Join(dir, name)); err == nil {
				n += fi.Size()
			}
		}
	}
	return n
}

// checkOffsets checks the offset store with offsets.Verify (or, with
// repair, mends it with offsets.Repair) against the partitions' heads
// (heads[topic][p], −1 when the partition could not be read), and reports
// what it found and did in r.
func checkOffsets(logsFS, fsys vfs.FS, path string, heads map[string][]int64, r *CheckReport, repair, dry bool) {
	if _, err := fsys.Stat(path); errors.Is(err, fs.ErrNotExist) {
		r.Notes = append(r.Notes, path+" does not exist (no consumer has committed an offset)")
		return
	}
	o := &offsets.CheckOptions{FS: fsys, Heads: heads, DryRun: dry}
	var rep *offsets.CheckReport
	if repair {
		o.TopicIDs = map[string]offsets.TopicID{}
		for _, t := range topicIDsOnDisk(logsFS, filepath.Dir(path)) {
			if id, err := offsets.ParseTopicID(t.id); err == nil {
				o.TopicIDs[t.name] = id
			}
		}
		rep = offsets.Repair(path, o)
	} else {
		rep = offsets.Verify(path, o)
	}
	r.Offsets += rep.Entries
	// What a repair fixed is no longer wrong (what it failed to do is
	// said after): a rebuilt store is whole, and a committed offset
	// deleted or set to the head is mended.
	fixed := func(k offsets.FindingKind) bool {
		switch {
		case dry:
			return false
		case rep.Rebuilt != nil:
			return len(rep.Errors) == 0
		}
		return repair && (k == offsets.FindingPastHead || k == offsets.FindingChecksum)
	}
	var unreadable, integrity bool
	integrityNote := func() {
		if integrity && !repair {
			r.Notes = append(r.Notes, path+": passbook repair rebuilds it from what reads back, and names the consumers whose committed offsets are lost (or restore it from a backup)")
		}
		integrity = false
	}
	for _, f := range rep.Findings {
		if f.Kind != offsets.FindingIntegrity {
			integrityNote()
		}
		switch {
		case f.Kind == offsets.FindingIntegrity:
			integrity = true
		case f.Kind == offsets.FindingUnreadable:
			unreadable = true
		}
		switch {
		case !f.Kind.Problem():
			r.Notes = append(r.Notes, path+": "+f.String())
		case !fixed(f.Kind):
			r.Problems = append(r.Problems, storage.Problem{Kind: ProblemOffsetStore, File: path, Pos: f.Pos, Detail: f.String()})
		}
	}
	integrityNote()
	if unreadable && !repair {
		r.Notes = append(r.Notes, path+": passbook repair rebuilds it from what reads back, and names the consumers whose committed offsets are lost")
	}
	if s := rep.Rebuilt; s != nil {
		r.Actions = append(r.Actions, rebuildAction(path, s))
	}
	for _, f := range rep.Fixed {
		a := storage.RepairAction{What: "set offset", File: path,
			Detail: fmt.Sprintf("committed offset of %s from %d to the head %d: the consumer goes on with the records appended from there", f.Key, f.Offset, f.Head)}
		if f.Kind == offsets.FindingChecksum {
			a = storage.RepairAction{What: "delete offset", File: path,
				Detail: fmt.Sprintf("committed offset of %s (stored as %d, failing its checksum): the consumer starts where its reset policy says; set it with passbook offsets set if the stored value is known to be right", f.Key, f.Offset)}
		}
		r.Actions = append(r.Actions, a)
	}
	for _, err := range rep.Errors {
		r.Problems = append(r.Problems, storage.Problem{Kind: ProblemOffsetStore, File: path, Pos: -1, Detail: err.Error()})
	}
}
