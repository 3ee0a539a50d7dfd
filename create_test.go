package passbook_test

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/storage"
	"github.com/passbook-log/passbook/vfs"
)

// pausingFS pauses MkdirAll of one directory until released.
type pausingFS struct {
	vfs.FS
	path    string
	entered chan struct{}
	release chan struct{}
}

func (f *pausingFS) MkdirAll(dir string, perm fs.FileMode) error {
	if dir == f.path {
		close(f.entered)
		<-f.release
	}
	return f.FS.MkdirAll(dir, perm)
}

// TestCreateTopic_DoesNotStopOtherTopics: while the creation of a topic
// of many partitions is stuck in the file system (its partition 5's
// directory), the data directory keeps working — appends to and reads of
// another topic, listing topics, creating and deleting a third — and the
// topic being created is neither listed nor creatable twice. Then the
// creation finishes and the topic is whole.
func TestCreateTopic_DoesNotStopOtherTopics(t *testing.T) {
	dir := t.TempDir()
	fsys := &pausingFS{FS: vfs.OS(), path: filepath.Join(dir, "topics", "big", "5"), entered: make(chan struct{}), release: make(chan struct{})}
	db, err := passbook.Open(dir, &passbook.Options{FS: fsys})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	a, err := db.CreateTopic("a", passbook.TopicConfig{Partitions: 1})
	if err != nil {
		t.Fatal(err)
	}
	created := make(chan error, 1)
	go func() {
		_, err := db.CreateTopic("big", passbook.TopicConfig{Partitions: 64})
		created <- err
	}()
	<-fsys.entered
	for i := range 10 {
		if _, err := a.AppendTo(0, []passbook.Record{{Value: []byte("v")}}, storage.DefaultDurability); err != nil {
			t.Fatalf("append %d to a while big is being created: %v", i, err)
		}
	}
	if got, err := db.Topic("a"); err != nil || got != a {
		t.Fatalf("Topic(a) = %v, %v", got, err)
	}
	for _, tp := range db.Topics() {
		if tp.Name() == "big" {
			t.Fatal("big is listed before its creation finished")
		}
	}
	if _, err := db.CreateTopic("big", passbook.TopicConfig{Partitions: 1}); !errors.Is(err, passbook.ErrTopicExists) {
		t.Fatalf("second CreateTopic(big) during the first: %v, want ErrTopicExists", err)
	}
	if _, err := db.Topic("big"); !errors.Is(err, passbook.ErrUnknownTopic) {
		t.Fatalf("Topic(big) during its creation: %v, want ErrUnknownTopic", err)
	}
	if _, err := db.CreateTopic("c", passbook.TopicConfig{Partitions: 2}); err != nil {
		t.Fatalf("CreateTopic(c) while big is being created: %v", err)
	}
	if err := db.DeleteTopic(t.Context(), "c"); err != nil {
		t.Fatalf("DeleteTopic(c) while big is being created: %v", err)
	}
	close(fsys.release)
	if err := <-created; err != nil {
		t.Fatal(err)
	}
	big, err := db.Topic("big")
	if err != nil || big.Partitions() != 64 {
		t.Fatalf("Topic(big) after its creation: %v, %v", big, err)
	}
	if _, err := big.AppendTo(63, []passbook.Record{{Value: []byte("v")}}, storage.DefaultDurability); err != nil {
		t.Fatal(err)
	}
	if st := db.FileStats(); st.Max != storage.DefaultMaxOpenFiles || st.Open == 0 || st.Open > st.Max {
		t.Fatalf("file stats %+v, want the default bound and some files open", st)
	}
}

// TestClose_DuringCreateTopic: Close waits for a creation in progress,
// which then fails with ErrClosed and leaves no topic behind that the
// next Open would take for whole.
func TestClose_DuringCreateTopic(t *testing.T) {
	dir := t.TempDir()
	fsys := &pausingFS{FS: vfs.OS(), path: filepath.Join(dir, "topics", "big", "2"), entered: make(chan struct{}), release: make(chan struct{})}
	db, err := passbook.Open(dir, &passbook.Options{FS: fsys})
	if err != nil {
		t.Fatal(err)
	}
	created := make(chan error, 1)
	go func() {
		_, err := db.CreateTopic("big", passbook.TopicConfig{Partitions: 4})
		created <- err
	}()
	<-fsys.entered
	closed := make(chan error, 1)
	go func() { closed <- db.Close() }()
	close(fsys.release)
	if err := <-created; !errors.Is(err, passbook.ErrClosed) && err != nil {
		t.Fatalf("CreateTopic during Close: %v, want nil or ErrClosed", err)
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	db, err = passbook.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if big, err := db.Topic("big"); err == nil && big.Partitions() != 4 {
		t.Fatalf("big reopened with %d partitions, want 4 or none", big.Partitions())
	} else if err != nil && !errors.Is(err, passbook.ErrUnknownTopic) {
		t.Fatal(err)
	}
}

// removePausingFS pauses the first Remove of a path containing match.
type removePausingFS struct {
	vfs.FS
	match   string
	once    sync.Once
	entered chan struct{}
	release chan struct{}
}

func (f *removePausingFS) Remove(name string) error {
	if strings.Contains(name, f.match) {
		f.once.Do(func() {
			close(f.entered)
			<-f.release
		})
	}
	return f.FS.Remove(name)
}

// TestDeleteTopic_DoesNotStopOtherTopics: while the deletion of a topic
// is stuck removing its files, appends to another topic go through, the
// deleted topic is gone from the list, and its name cannot be created
// again until the deletion (its committed offsets included) is done.
func TestDeleteTopic_DoesNotStopOtherTopics(t *testing.T) {
	dir := t.TempDir()
	fsys := &removePausingFS{FS: vfs.OS(), match: "~deleted-", entered: make(chan struct{}), release: make(chan struct{})}
	db, err := passbook.Open(dir, &passbook.Options{FS: fsys})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	a, err := db.CreateTopic("a", passbook.TopicConfig{Partitions: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateTopic("big", passbook.TopicConfig{Partitions: 8}); err != nil {
		t.Fatal(err)
	}
	deleted := make(chan error, 1)
	go func() { deleted <- db.DeleteTopic(t.Context(), "big") }()
	<-fsys.entered
	for i := range 10 {
		if _, err := a.AppendTo(0, []passbook.Record{{Value: []byte("v")}}, storage.DefaultDurability); err != nil {
			t.Fatalf("append %d to a while big is being deleted: %v", i, err)
		}
	}
	for _, tp := range db.Topics() {
		if tp.Name() == "big" {
			t.Fatal("big is listed while it is being deleted")
		}
	}
	if _, err := db.CreateTopic("big", passbook.TopicConfig{Partitions: 1}); !errors.Is(err, passbook.ErrTopicExists) {
		t.Fatalf("CreateTopic(big) during its deletion: %v, want ErrTopicExists", err)
	}
	close(fsys.release)
	if err := <-deleted; err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateTopic("big", passbook.TopicConfig{Partitions: 1}); err != nil {
		t.Fatalf("CreateTopic(big) after its deletion: %v", err)
	}
}
