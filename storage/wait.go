package storage

import (
	"context"
	"errors"
	"reflect"
)

// Waiting on many logs at once.
//
// A long poll over many partitions (a Kafka Fetch, a consumer of every
// partition of a topic) waits for the first of its logs to grow. WaitAny
// does it in the caller's goroutine: it takes each log's change channel
// (the one Log.Wait waits on, closed by the next append and by Close) and
// selects over them all and ctx, so nothing it starts runs on after it
// returns, however many logs and however many waits.

// WaitFor is a log and the offset a wait wants a record at: the wait is
// over once Log.Head() > Offset.
type WaitFor struct {
	Log    *Log
	Offset int64
	// Stable: the wait is over once Log.LastStableOffset() > Offset
	// instead (a read_committed long poll).
	Stable bool
}

// ready reports whether the wait is over.
func (w WaitFor) ready() bool {
	if w.Stable {
		return w.Log.LastStableOffset() > w.Offset
	}
	return w.Log.head.Load() > w.Offset
}

// WaitAny blocks until one of the logs holds a record at its offset, one
// of them is closed, or ctx is done. It returns the index in ws of the log
// that grew (and nil) or was closed (and ErrClosed), or −1 and ctx.Err().
// With no logs it waits for ctx. It starts no goroutine.
func WaitAny(ctx context.Context, ws ...WaitFor) (int, error) {
	if len(ws) == 1 {
		wait := ws[0].Log.Wait
		if ws[0].Stable {
			wait = ws[0].Log.WaitStable
		}
		err := wait(ctx, ws[0].Offset)
		if err != nil && !errors.Is(err, ErrClosed) {
			return -1, err
		}
		return 0, err
	}
	cases := make([]reflect.SelectCase, len(ws)+1)
	cases[0] = reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ctx.Done())}
	for {
		for i, w := range ws {
			// The channel is taken before the head is read, as in
			// Log.Wait: an append after the read closes it.
			ch := w.Log.notify.wait()
			if w.ready() {
				return i, nil
			}
			if w.Log.closed.Load() {
				return i, ErrClosed
			}
			cases[i+1] = reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ch)}
		}
		if ctx.Err() != nil {
			return -1, ctx.Err()
		}
		if chosen, _, _ := reflect.Select(cases); chosen == 0 {
			return -1, ctx.Err()
		}
	}
}
