package kafka

// Request buffers: a request is read into a buffer taken from the
// server's framePool, and a request whose handler keeps no reference
// to its bytes once it returns (reusableFrame: Produce, whose batches the
// storage engine copies into the segment before AppendBatch returns,
// and Fetch, which has no byte fields) gives the buffer back for the next
// request of about its size, on any connection. Other requests' buffers
// are left to the garbage collector, as before pooling: JoinGroup's
// protocol metadata, SyncGroup's assignments and SASL tokens are decoded
// as slices of the frame and kept by the group coordinator or the
// authenticator.
//
// Memory: queued.max.request.bytes counts every byte of the pool, idle
// buffers included. A request that needs memory the budget does not have
// first takes it from the idle buffers (they are dropped), and a buffer
// given back while a connection waits for the budget is dropped rather
// than kept, so an idle buffer never makes a connection wait. Idle
// buffers are also capped at a quarter of the budget (at most
// framePoolMaxIdle), and buffers over framePoolMaxBuffer are never kept.

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	// frameFirst is the first buffer of a request whose size no idle
	// buffer fits: it then doubles as the bytes arrive.
	frameFirst = 4 << 10
	// framePoolMaxBuffer is the largest buffer kept for reuse.
	framePoolMaxBuffer = 8 << 20
	// framePoolMaxIdle caps what idle buffers hold in all.
	framePoolMaxIdle = 32 << 20
)

// frameClasses are the sizes buffers are allocated at, from frameFirst
// to framePoolMaxBuffer in four steps per doubling (4, 5, 6, 7, 8 KiB,
// 10, 12, 14, 16 KiB, …), so that a buffer fits the next request of about
// the size of the one it was made for and at most a fifth of it is
// spare.
var frameClasses = func() []int {
	var cs []int
	for p := frameFirst; p < framePoolMaxBuffer; p *= 2 {
		for q := range 4 {
			cs = append(cs, p+q*p/4)
		}
	}
	return append(cs, framePoolMaxBuffer)
}()

// frameClass returns the index of the smallest class of at least n
// bytes, and false when n is over the largest.
func frameClass(n int) (int, bool) {
	i, _ := slices.BinarySearch(frameClasses, n)
	return i, i < len(frameClasses)
}

// frameSize is the size a buffer for n bytes is allocated at: its
// class's, or n itself past the largest class.
func frameSize(n int) int {
	if i, ok := frameClass(n); ok {
		return frameClasses[i]
	}
	return n
}

// framePool keeps idle request buffers by class. Its memory is charged
// to budget: an idle buffer's capacity stays charged until the buffer is
// taken again (its charge goes with it) or dropped.
type framePool struct {
	budget  *byteBudget
	maxIdle int64
	// waiting counts connections waiting for budget: while any does,
	// buffers given back are dropped, not kept.
	waiting atomic.Int32
	mu      struct {
		sync.Mutex
		free [][][]byte // by class, most recently given back last
		idle int64      // the capacity of every buffer in free
	}
}

func newFramePool(budget *byteBudget) *framePool {
	p := &framePool{budget: budget, maxIdle: min(budget.limit/4, framePoolMaxIdle)}
	p.mu.free = make([][][]byte, len(frameClasses))
	return p
}

// usage reports what the budget counts for requests being read and
// handled, and what for idle buffers. (Read under the pool's lock: a
// buffer does not move between the two meanwhile.)
func (p *framePool) usage() (inFlight, idle int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.budget.inUse() - p.mu.idle, p.mu.idle
}

// take returns an idle buffer of n's class, with its charge, or nil.
func (p *framePool) take(n int) []byte {
	i, ok := frameClass(n)
	if !ok {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	free := p.mu.free[i]
	if len(free) == 0 {
		return nil
	}
	b := free[len(free)-1]
	free[len(free)-1] = nil
	p.mu.free[i] = free[:len(free)-1]
	p.mu.idle -= int64(cap(b))
	return b[:0]
}

// acquire charges n more bytes to the budget, dropping idle buffers to
// make room before it waits, until ctx is done or the deadline passes,
// for other requests to be done. (The deadline's context is made only
// for a wait: most calls do not wait.)
func (p *framePool) acquire(ctx context.Context, deadline time.Time, n int64) error {
	if p.budget.tryAcquireQuiet(n) {
		return nil
	}
	p.waiting.Add(1)
	defer p.waiting.Add(-1)
	// From here on no buffer is kept idle (put sees waiting, under mu):
	// dropping those idle now frees everything the pool holds.
	p.dropIdle()
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	return p.budget.acquire(ctx, n)
}

// dropIdle drops every idle buffer and gives their charge back.
func (p *framePool) dropIdle() {
	p.mu.Lock()
	n := p.mu.idle
	for i := range p.mu.free {
		clear(p.mu.free[i])
		p.mu.free[i] = p.mu.free[i][:0]
	}
	p.mu.idle = 0
	p.mu.Unlock()
	p.budget.release(n)
}

// put gives back a buffer of a request that is done with it, whose
// capacity is charged to the budget: it is kept for reuse if its size is
// a class, nobody waits for the budget and the idle buffers have room;
// otherwise it is dropped and its charge given back.
func (p *framePool) put(b []byte) {
	c := cap(b)
	if i, ok := frameClass(c); ok && frameClasses[i] == c {
		p.mu.Lock()
		if p.waiting.Load() == 0 && p.mu.idle+int64(c) <= p.maxIdle {
			p.mu.free[i] = append(p.mu.free[i], b[:0])
			p.mu.idle += int64(c)
			p.mu.Unlock()
			return
		}
		p.mu.Unlock()
	}
	p.budget.release(int64(c))
}

// tryAcquireQuiet takes n bytes if they fit now, without counting a wait.
func (b *byteBudget) tryAcquireQuiet(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.mu.used == 0 || b.mu.used+n <= b.limit {
		b.mu.used += n
		return true
	}
	return false
}

// reusableFrame reports whether a request frame's buffer may be reused
// once its handler returned: its API's handler, and the reply it
// returns, keep no slice of it. Produce: the batches are validated and
// copied into the segment (or the mapping) inside AppendBatch, the
// producer and transaction bookkeeping keeps header fields only, and the
// reply holds the response and the logs to wait on. Fetch: its request
// has no byte fields.
func reusableFrame(frame []byte) bool {
	if len(frame) < 2 {
		return false
	}
	switch kmsg.Key(int16(frame[0])<<8 | int16(frame[1])) {
	case kmsg.Produce, kmsg.Fetch:
		return true
	}
	return false
}
