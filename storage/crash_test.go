package storage

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/passbook-log/passbook/batch"
	"github.com/passbook-log/passbook/vfs"
)

// TestLog_PowerLoss_EveryOperation fails the i-th file-system operation of
// a workload (i = 0, 1, 2, … until the workload completes), then simulates
// a power loss that keeps only fsync'd bytes and tears unsynced tails.
// After reopening, every record whose fsync'd append returned is there
// with its offset and bytes, offsets are dense, and nothing is invented.
func TestLog_PowerLoss_EveryOperation(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	for i := 0; ; i++ {
		mem := vfs.NewMem()
		faulty := vfs.NewFaulty(mem, vfs.FaultyOptions{FailAt: i, Sticky: true, ShortWrite: i%2 == 1})
		o := &Options{FS: faulty, Durability: Fsync, SegmentBytes: 2 << 10, IndexInterval: 256}
		acked := int64(0)
		l, err := Open("/p", o)
		if err == nil {
			for n := 0; n < 60; {
				k := 1 + n%4
				off, err := l.Append(recs(n, k), DefaultDurability)
				if err != nil {
					break
				}
				if off != int64(n) {
					t.Fatalf("fault %d: append %d returned offset %d", i, n, off)
				}
				n += k
				acked = int64(n)
			}
			// No Close: the power goes out with the log open.
		}
		done := faulty.Ops() <= i
		crashed := mem.Crash(vfs.CrashOptions{Tear: true, Rand: rand.New(rand.NewPCG(uint64(seed), uint64(i)))})
		if l != nil {
			l.Close() // after the power loss: only its goroutine goes; crashed keeps what was synced
		}
		l2, err := Open("/p", &Options{FS: crashed, SegmentBytes: 2 << 10, IndexInterval: 256})
		if err != nil {
			t.Fatalf("fault at op %d: reopen after power loss: %v", i, err)
		}
		if l2.Head() < acked {
			t.Fatalf("fault at op %d: head %d after power loss, but %d records were acknowledged", i, l2.Head(), acked)
		}
		checkRecords(t, l2, 0)
		l2.Close()
		if done {
			if i < 20 {
				t.Fatalf("workload finished after only %d operations", i)
			}
			return
		}
	}
}

// TestLog_PowerLoss_GroupCommit crashes a log at a random moment while 16
// goroutines append with fsync durability, and checks every append that
// returned before the crash.
func TestLog_PowerLoss_GroupCommit(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	for round := range 5 {
		mem := vfs.NewMem()
		l := mustOpen(t, "/p", &Options{FS: mem, Durability: Fsync, SegmentBytes: 16 << 10, IndexInterval: 512})
		var mu sync.Mutex
		acked := map[int64][]byte{}
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for g := range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for seq := 0; ; seq++ {
					select {
					case <-stop:
						return
					default:
					}
					v := fmt.Appendf(nil, "g%02d-%06d", g, seq)
					off, err := l.Append([]batch.Record{{Value: v}}, DefaultDurability)
					if err != nil {
						return
					}
					mu.Lock()
					acked[off] = v
					mu.Unlock()
				}
			}()
		}
		time.Sleep(time.Duration(5+rng.IntN(30)) * time.Millisecond)
		mu.Lock()
		crashed := mem.Crash(vfs.CrashOptions{Tear: true, Rand: rng})
		want := make(map[int64][]byte, len(acked))
		for k, v := range acked {
			want[k] = v
		}
		mu.Unlock()
		close(stop)
		wg.Wait()
		l.Close()

		l2 := mustOpen(t, "/p", &Options{FS: crashed})
		got := map[int64][]byte{}
		next := int64(0)
		for rec, err := range l2.Records(0) {
			if err != nil {
				t.Fatal(err)
			}
			if rec.Offset != next {
				t.Fatalf("round %d: offset %d after %d: not dense", round, rec.Offset, next-1)
			}
			next++
			got[rec.Offset] = bytes.Clone(rec.Value)
		}
		for off, v := range want {
			if !bytes.Equal(got[off], v) {
				t.Fatalf("round %d: acknowledged offset %d: got %q, want %q", round, off, got[off], v)
			}
		}
		if len(want) < 16 {
			t.Fatalf("round %d: only %d appends acknowledged before the crash", round, len(want))
		}
		t.Logf("round %d: %d acknowledged, %d survived", round, len(want), len(got))
		l2.Close()
	}
}

// TestLog_Kill9 runs an appender in a child process, kills it with SIGKILL
// at random moments, and checks after each kill that every offset the
// child printed (after Append returned, durability InOS) is in the log.
func TestLog_Kill9(t *testing.T) {
	if os.Getenv("PASSBOOK_KILL9_CHILD") != "" {
		kill9Child(os.Getenv("PASSBOOK_KILL9_CHILD"))
		return
	}
	if testing.Short() {
		t.Skip("spawns processes")
	}
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	dir := t.TempDir()
	printed := int64(0)
	allocated := 0 // rounds whose killed active segment was longer than its batches
	for round := range 20 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestLog_Kill9$")
		cmd.Env = append(os.Environ(), "PASSBOOK_KILL9_CHILD="+dir)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := make(chan int64, 1024)
		go func() {
			defer close(lines)
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				if n, err := strconv.ParseInt(sc.Text(), 10, 64); err == nil {
					lines <- n
				}
			}
		}()
		// Wait until the child has appended something, then kill it at
		// a random moment.
		first, ok := <-lines
		if !ok {
			cmd.Wait()
			t.Fatalf("round %d: child printed nothing", round)
		}
		printed = max(printed, first+1)
		time.Sleep(time.Duration(rng.IntN(40)) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		for n := range lines {
			printed = max(printed, n+1)
		}
		cmd.Wait()

		// The active segment as the kill left it: on the mapped write
		// path, longer than its batches (space allocated ahead).
		names, _ := os.ReadDir(dir)
		var killedLen int64
		for _, e := range names {
			if fi, err := e.Info(); err == nil && filepath.Ext(e.Name()) == ".log" {
				killedLen = fi.Size() // names are sorted: the last .log is the active one
			}
		}
		l := mustOpen(t, dir, nil)
		if l.Head() < printed {
			t.Fatalf("round %d: head %d, but the child printed offset %d", round, l.Head(), printed-1)
		}
		checkRecords(t, l, 0)
		if killedLen > l.active().size.Load() {
			allocated++
		}
		t.Logf("round %d: printed %d, head %d, torn bytes %d", round, printed, l.Head(), l.Recovery().TornBytes)
		l.Close()
	}
	if vfs.CanMap(vfs.OS()) && allocated == 0 {
		t.Error("no kill left a segment longer than its batches: the children did not write through a mapping")
	}
}

// kill9Child appends value(offset) records forever, printing each offset
// once Append has returned.
func kill9Child(dir string) {
	l, err := Open(dir, &Options{SegmentBytes: 256 << 10})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	w := bufio.NewWriterSize(os.Stdout, 64)
	for {
		n := int(l.Head())
		k := 1 + n%5
		off, err := l.Append(recs(n, k), DefaultDurability)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Fprintln(w, off+int64(k)-1)
		w.Flush()
	}
}

func TestLog_TornTail(t *testing.T) {
	for _, cut := range []int{1, 10, 60, 61, 70} {
		t.Run(fmt.Sprint(cut), func(t *testing.T) {
			mem := vfs.NewMem()
			// write(2), so that the synced file is exactly the first
			// batch: the test cuts it by hand (the mapped path's file is
			// longer than its data: TestMapped_TornTail).
			l := mustOpen(t, "/p", &Options{FS: vfs.WithoutMapping(mem)})
			l.Append(recs(0, 10), Fsync)
			l.Append(recs(10, 10), InOS)
			// Power loss: the second batch is partly written.
			crashed := mem.Crash(vfs.CrashOptions{})
			name := "/p/" + segmentName(0, ".log")
			full, _ := mem.FileBytes(name)
			synced, _ := crashed.FileBytes(name)
			torn := full[:len(synced)+cut]
			crashed.SetFileBytes(name, torn)
			l.Close()

			l2 := mustOpen(t, "/p", &Options{FS: crashed})
			defer l2.Close()
			if l2.Head() != 10 {
				t.Fatalf("head = %d, want 10", l2.Head())
			}
			if got := l2.Recovery().TornBytes; got != int64(cut) {
				t.Fatalf("torn bytes = %d, want %d", got, cut)
			}
			checkRecords(t, l2, 0)
			if _, err := l2.Append(recs(10, 1), DefaultDurability); err != nil {
				t.Fatal(err)
			}
			checkRecords(t, l2, 0)
		})
	}
}

func TestLog_Corrupt(t *testing.T) {
	dir := t.TempDir()
	o := &Options{SegmentBytes: 4 << 10}
	l := mustOpen(t, dir, o)
	for i := 0; i < 500; i += 5 {
		l.Append(recs(i, 5), DefaultDurability)
	}
	l.Close()
	flip := func(name string, pos int64) {
		t.Helper()
		path := filepath.Join(dir, name)
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		b[pos] ^= 0x40
		os.WriteFile(path, b, 0o644)
	}

	// A flipped byte in a closed segment: Open succeeds (closed segments
	// are not re-read), and reading the batch fails naming file and byte.
	flip(segmentName(0, ".log"), 1000)
	l = mustOpen(t, dir, o)
	var ce *CorruptError
	var err error
	for _, e := range l.Records(0) {
		err = e
	}
	if !errors.As(err, &ce) || !errors.Is(err, ErrCorrupt) || ce.File != filepath.Join(dir, segmentName(0, ".log")) || ce.Pos > 1000 || ce.Pos+500 < 1000 {
		t.Fatalf("reading a flipped closed segment: %v", err)
	}
	t.Logf("error: %v", err)
	l.Close()
}

// TestLog_Corrupt_ActiveSegment damages the active segment of a log that
// was not closed cleanly: inside the fsync'd range, damage is corruption,
// not a torn tail. (Past the recovery point it is a torn tail even before
// a whole valid batch: TestRecover_OpenAndVerifyAgree.)
func TestLog_Corrupt_ActiveSegment(t *testing.T) {
	for _, tc := range []struct {
		name   string
		synced bool // damage inside the checkpointed range
	}{
		{"inside the fsync'd range", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := vfs.NewMem()
			l := mustOpen(t, "/p", &Options{FS: mem})
			l.Append(recs(0, 10), Fsync)
			if tc.synced {
				if err := l.checkpointNow(); err != nil {
					t.Fatal(err)
				}
			}
			l.Append(recs(10, 10), InOS)
			l.Append(recs(20, 10), InOS)
			crashed := mem.Crash(vfs.CrashOptions{Tear: true})
			name := "/p/" + segmentName(0, ".log")
			b, _ := mem.FileBytes(name) // all three batches, as after kill -9
			b[80] ^= 1                  // inside the first batch
			crashed.SetFileBytes(name, b)
			l.Close()
			_, err := Open("/p", &Options{FS: crashed})
			var ce *CorruptError
			if !errors.As(err, &ce) || ce.Pos != 0 || ce.File != name {
				t.Fatalf("Open = %v, want a CorruptError at byte 0 of %s", err, name)
			}
			t.Logf("error: %v", err)
		})
	}
}
