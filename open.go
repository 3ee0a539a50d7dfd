package passbook

import (
	"errors"

	"github.com/passbook-log/passbook/storage"
)

// Open and Close of a data directory with many partitions. Each
// partition's Open and Close is independent of the others' (its own
// directory and files; only the FileCache is shared, and it is safe for
// concurrent use), so Open opens the partitions of every topic through one
// pool (parallel, create.go) rather than topic by topic: a data directory
// of 1,000 one-partition topics opens as fast as one topic of 1,000
// partitions. A partition that fails to open is fenced as before
// (finishTopic), the others serve. Close closes every partition of every
// topic through the same pool.

// openAllPartitions opens the partitions of every topic in pending.
func (db *DB) openAllPartitions(pending []*topicOpen) {
	type job struct{ topic, partition int }
	var jobs []job
	for i, to := range pending {
		to.opened = make([]openedPartition, to.t.cfg.Partitions)
		for p := range to.t.cfg.Partitions {
			jobs = append(jobs, job{i, p})
		}
	}
	parallel(len(jobs), func(j int) {
		to, p := pending[jobs[j].topic], jobs[j].partition
		op := &to.opened[p]
		op.l, op.err = db.openPartition(to.t.name, to.t.cfg, to.d, p)
	})
}

// closeOpened closes the partitions opened for topics that Open gives up
// on before finishing them.
func closeOpened(pending []*topicOpen) {
	var logs []*storage.Log
	for _, to := range pending {
		for _, op := range to.opened {
			if op.l != nil {
				logs = append(logs, op.l)
			}
		}
	}
	closeLogs(logs)
}

// closeTopics closes every partition of topics, several at a time.
func closeTopics(topics []*Topic) error {
	var logs []*storage.Log
	for _, t := range topics {
		for _, l := range t.parts {
			if l != nil { // nil: fenced
				logs = append(logs, l)
			}
		}
	}
	return closeLogs(logs)
}

// closeLogs closes logs, several at a time; a log already closed is not an
// error.
func closeLogs(logs []*storage.Log) error {
	errs := make([]error, len(logs))
	parallel(len(logs), func(i int) {
		if err := logs[i].Close(); err != nil && !errors.Is(err, storage.ErrClosed) {
			errs[i] = err
		}
	})
	return errors.Join(errs...)
}
