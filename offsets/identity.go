package offsets

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
	"time"
)

// The store's file can vanish or change under it: deleted (rm), replaced
// (a restore copied over it, mv), truncated. SQLite keeps writing to the
// file it has open, so commits would be acknowledged into a file no one
// will read again. The store watches its path: every WatchInterval, and
// before every group commit's fsync (SyncGroup), it checks that the path
// still names the file it opened (device and inode) and that the file
// still starts with SQLite's header. Once not, the store is lost: every
// later call fails with ErrUnavailable saying what happened, and
// Options.OnUnavailable hears it once.

// WatchInterval is how often a store on the OS checks its file.
const WatchInterval = time.Second

// sqliteHeader starts every SQLite database file.
var sqliteHeader = []byte("SQLite format 3\x00")

// fileID is a file's identity on the OS.
type fileID struct{ dev, ino uint64 }

func statID(fi fs.FileInfo) (fileID, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, false
	}
	return fileID{dev: uint64(st.Dev), ino: uint64(st.Ino)}, true
}

// watch starts the watcher of a store on the OS.
func (s *SQLite) watch() {
	fi, err := os.Stat(s.path)
	if err != nil {
		return
	}
	id, ok := statID(fi)
	if !ok {
		return
	}
	s.fileID = id
	s.watchStop = make(chan struct{})
	s.watchDone = make(chan struct{})
	go func() {
		defer close(s.watchDone)
		t := time.NewTicker(WatchInterval)
		defer t.Stop()
		for {
			select {
			case <-s.watchStop:
				return
			case <-t.C:
				if err := s.checkFile(); err != nil {
					s.fail(err)
				}
			}
		}
	}()
}

// stopWatch stops the watcher and waits for it.
func (s *SQLite) stopWatch() {
	if s.watchStop != nil {
		close(s.watchStop)
		<-s.watchDone
		s.watchStop = nil
	}
}

// checkFile reports, as an error matching ErrUnavailable, a store whose
// path no longer names its file, or whose file lost its header.
func (s *SQLite) checkFile() error {
	if s.fileID == (fileID{}) {
		return nil // not on the OS, or not known
	}
	f, err := os.Open(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %s was deleted while open: commits since were not kept; restart to open a new store, or restore it from a backup first (passbook verify says what is readable)", ErrUnavailable, s.path)
	} else if err != nil {
		return nil // a transient error is not a verdict
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil
	}
	if id, ok := statID(fi); ok && id != s.fileID {
		return fmt.Errorf("%w: %s was replaced by another file while open (inode %d, not %d): commits are not written to it; restart to open the new one", ErrUnavailable, s.path, id.ino, s.fileID.ino)
	}
	head := make([]byte, len(sqliteHeader))
	if n, _ := f.ReadAt(head, 0); n < len(head) || !bytes.Equal(head, sqliteHeader) {
		return fmt.Errorf("%w: %s was truncated or overwritten while open (%d bytes, no SQLite header): passbook repair rebuilds the store from what is readable", ErrUnavailable, s.path, fi.Size())
	}
	return nil
}

// fail marks the store lost with err (the first error wins) and tells
// Options.OnUnavailable once.
func (s *SQLite) fail(err error) {
	if s.lost.CompareAndSwap(nil, &err) && s.opts.OnUnavailable != nil {
		s.opts.OnUnavailable(err)
	}
}

// Err returns the error that made the store unavailable (matching
// ErrUnavailable), or nil.
func (s *SQLite) Err() error {
	if p := s.lost.Load(); p != nil {
		return *p
	}
	return nil
}

// Stats are the store's counters, for /metrics.
type Stats struct {
	// GroupCommits are the writes SyncGroup made durable, GroupSyncs the
	// fsyncs of the WAL that did it (GroupCommits/GroupSyncs commits
	// shared each); both zero in the other modes.
	GroupCommits, GroupSyncs uint64
	// Unavailable: the store refuses every call (Err says why).
	Unavailable bool
}

// Stats returns the store's counters.
func (s *SQLite) Stats() Stats {
	st := Stats{Unavailable: s.lost.Load() != nil}
	if s.group != nil {
		st.GroupSyncs = s.group.syncs.Load()
		s.group.mu.Lock()
		st.GroupCommits = s.group.synced
		s.group.mu.Unlock()
	}
	return st
}
