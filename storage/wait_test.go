package storage

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/passbook-log/passbook/internal/leakcheck"
	"github.com/passbook-log/passbook/vfs"
)

// openMany opens n logs on a memory file system, each holding one record.
func openMany(t *testing.T, n int) []*Log {
	t.Helper()
	fs := vfs.NewMem()
	logs := make([]*Log, n)
	for i := range logs {
		logs[i] = mustOpen(t, fmt.Sprintf("/p%d", i), &Options{FS: fs})
		if _, err := logs[i].Append(recs(0, 1), InOS); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { logs[i].Close() })
	}
	return logs
}

// atHeads is a wait for a record past every log's head.
func atHeads(logs []*Log) []WaitFor {
	ws := make([]WaitFor, len(logs))
	for i, l := range logs {
		ws[i] = WaitFor{Log: l, Offset: l.Head()}
	}
	return ws
}

type waitResult struct {
	i   int
	err error
}

func TestWaitAny(t *testing.T) {
	for _, c := range []struct {
		name  string
		logs  int
		event func(t *testing.T, logs []*Log, cancel context.CancelFunc)
		i     int
		err   error
	}{
		{"the log that grew", 8, func(t *testing.T, logs []*Log, _ context.CancelFunc) {
			if _, err := logs[5].Append(recs(1, 1), InOS); err != nil {
				t.Fatal(err)
			}
		}, 5, nil},
		{"one log that grew", 1, func(t *testing.T, logs []*Log, _ context.CancelFunc) {
			if _, err := logs[0].Append(recs(1, 1), InOS); err != nil {
				t.Fatal(err)
			}
		}, 0, nil},
		{"a log closed", 8, func(t *testing.T, logs []*Log, _ context.CancelFunc) { logs[2].Close() }, 2, ErrClosed},
		{"one log closed", 1, func(t *testing.T, logs []*Log, _ context.CancelFunc) { logs[0].Close() }, 0, ErrClosed},
		{"ctx done", 8, func(_ *testing.T, _ []*Log, cancel context.CancelFunc) { cancel() }, -1, context.Canceled},
		{"ctx done on one log", 1, func(_ *testing.T, _ []*Log, cancel context.CancelFunc) { cancel() }, -1, context.Canceled},
		{"ctx done with no logs", 0, func(_ *testing.T, _ []*Log, cancel context.CancelFunc) { cancel() }, -1, context.Canceled},
	} {
		t.Run(c.name, func(t *testing.T) {
			logs := openMany(t, c.logs)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			done := make(chan waitResult)
			ws := atHeads(logs)
			go func() {
				i, err := WaitAny(ctx, ws...)
				done <- waitResult{i, err}
			}()
			c.event(t, logs, cancel)
			if r := <-done; r.i != c.i || !errors.Is(r.err, c.err) || (c.err == nil) != (r.err == nil) {
				t.Errorf("WaitAny = %d, %v; want %d, %v", r.i, r.err, c.i, c.err)
			}
		})
	}
}

func TestWaitAny_AlreadyThere(t *testing.T) {
	logs := openMany(t, 4)
	ws := atHeads(logs)
	ws[3].Offset = 0 // log 3 holds offset 0
	if i, err := WaitAny(context.Background(), ws...); i != 3 || err != nil {
		t.Errorf("WaitAny = %d, %v; want 3, nil", i, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	if i, err := WaitAny(ctx); i != -1 || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("WaitAny of no logs = %d, %v; want -1 and the deadline", i, err)
	}
}

// waitersIn counts the goroutines whose stacks are in WaitAny or
// Log.Wait, and says whether one of them is blocked in a select.
func waitersIn() (n int, selecting bool) {
	for _, g := range leakcheck.Stacks() {
		if strings.Contains(g, "storage.WaitAny(") || strings.Contains(g, "storage.(*Log).Wait(") {
			n++
			selecting = selecting || strings.Contains(g, "[select")
		}
	}
	return n, selecting
}

// TestWaitAny_NoGoroutinesPileUp waits on 64 logs 500 times, each wait
// ended by an append to one of them or by its ctx: while a wait blocks,
// it is the only goroutine waiting (WaitAny starts none per log), and
// nothing is left waiting after it returns.
func TestWaitAny_NoGoroutinesPileUp(t *testing.T) {
	logs := openMany(t, 64)
	base := runtime.NumGoroutine()
	for round := range 500 {
		ctx, cancel := context.WithCancel(t.Context())
		ws := atHeads(logs)
		done := make(chan waitResult)
		go func() {
			i, err := WaitAny(ctx, ws...)
			done <- waitResult{i, err}
		}()
		// Until the wait blocks in its select: then count who waits.
		for {
			n, selecting := waitersIn()
			if selecting {
				if n != 1 {
					t.Fatalf("round %d: %d goroutines waiting for one WaitAny over %d logs", round, n, len(logs))
				}
				break
			}
			runtime.Gosched()
		}
		want := waitResult{-1, context.Canceled}
		if round%2 == 0 {
			p := round / 2 % len(logs)
			if _, err := logs[p].Append(recs(round, 1), InOS); err != nil {
				t.Fatal(err)
			}
			want = waitResult{p, nil}
		} else {
			cancel()
		}
		if r := <-done; r.i != want.i || !errors.Is(r.err, want.err) {
			t.Fatalf("round %d: WaitAny = %d, %v; want %d, %v", round, r.i, r.err, want.i, want.err)
		}
		cancel()
	}
	if n, _ := waitersIn(); n != 0 {
		t.Errorf("%d goroutines still waiting after the last WaitAny returned", n)
	}
	t.Logf("%d goroutines before the waits, %d after", base, runtime.NumGoroutine())
}

// waitGoroutines is the wait WaitAny replaced, for its benchmark: a
// goroutine per log, the first to wake cancelling the others.
func waitGoroutines(ctx context.Context, ws []WaitFor) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for _, w := range ws {
		wg.Go(func() {
			if w.Log.Wait(ctx, w.Offset) == nil {
				cancel()
			}
		})
	}
	wg.Wait()
}

// BenchmarkWaitAny is one long-poll round trip over n logs: a waiter
// blocks on all of them, an append to one (round robin) wakes it.
func BenchmarkWaitAny(b *testing.B) {
	for _, n := range []int{1, 64, 1000} {
		for _, impl := range []struct {
			name string
			wait func(context.Context, []WaitFor)
		}{
			{"WaitAny", func(ctx context.Context, ws []WaitFor) { WaitAny(ctx, ws...) }},
			{"goroutine_per_log", waitGoroutines},
		} {
			b.Run(fmt.Sprintf("logs=%d/%s", n, impl.name), func(b *testing.B) {
				fs := vfs.NewMem()
				logs := make([]*Log, n)
				for i := range logs {
					l, err := Open(fmt.Sprintf("/p%d", i), &Options{FS: fs})
					if err != nil {
						b.Fatal(err)
					}
					defer l.Close()
					logs[i] = l
				}
				rec := recs(0, 1)
				woke := make(chan struct{})
				next := make(chan []WaitFor)
				go func() {
					for ws := range next {
						impl.wait(context.Background(), ws)
						woke <- struct{}{}
					}
				}()
				defer close(next)
				b.ResetTimer()
				for i := range b.N {
					next <- atHeads(logs)
					if _, err := logs[i%n].Append(rec, InOS); err != nil {
						b.Fatal(err)
					}
					<-woke
				}
			})
		}
	}
}
