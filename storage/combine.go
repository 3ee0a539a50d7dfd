package storage

import (
	"runtime"
	"sync"

	"github.com/passbook-log/passbook/batch"
)

// Appenders that arrive while another holds the log combine (issue 21,
// item 4): each Append queues its records, and one of them, the leader,
// takes everything queued under one hold of Log.mu and writes it as one
// batch (split only at Options.MaxBatchBytes): one clock read, one
// encoding and CRC, one copy into the segment, one index update and one
// wake-up of readers for the lot, instead of one each. Every Append still
// gets its own first offset, its records dense and in one piece, and its
// own error: a record refused for its timestamp refuses only its call.
//
// Leadership passes from hand to hand: a leader takes one round, what
// was queued when it got the lock, and hands the lead to the first
// appender that queued after, so no caller serves the others for long.
// An appender with nobody ahead of it leads at once: alone, Append pays
// two uncontended locks more than before.
type combiner struct {
	mu      sync.Mutex
	waiting []*appendReq
	leading bool // a leader is appending, or has been handed the lead
	spare   []*appendReq
	// combining: the last round took more than one Append, so the next
	// leader yields for the others to queue; every yieldProbe-th round
	// yields anyway, to find out whether others would. Under mu.
	combining bool
	led       int64
	recs      []batch.Record // a round's records, under Log.mu
	// rounds and calls count the rounds and the Appends they took, under
	// Log.mu (calls/rounds is how many Appends combine).
	rounds, calls int64
}

// appendReq is one Append waiting in the combiner.
type appendReq struct {
	recs       []batch.Record
	first, end int64 // its offsets, once written
	err        error
	lead       bool          // woken to lead, not with its result
	wake       chan struct{} // its wake-up: a result, or the lead
}

var appendReqs = sync.Pool{New: func() any { return &appendReq{wake: make(chan struct{}, 1)} }}

// appendCombined appends recs, validated, in a round of combined appends
// and returns the offsets [first, end) they got.
func (l *Log) appendCombined(recs []batch.Record) (first, end int64, err error) {
	r := appendReqs.Get().(*appendReq)
	r.recs, r.lead, r.err = recs, false, nil
	c := &l.comb
	c.mu.Lock()
	c.waiting = append(c.waiting, r)
	yield := true // the lead was handed on: others are appending
	if c.leading {
		c.mu.Unlock()
		<-r.wake
	} else {
		c.leading = true
		c.led++
		yield = c.combining || c.led%yieldProbe == 0
		c.mu.Unlock()
		r.lead = true
	}
	if r.lead {
		l.leadRound(yield)
	}
	first, end, err = r.first, r.end, r.err
	r.recs, r.err = nil, nil
	appendReqs.Put(r)
	return first, end, err
}

// yieldProbe is how often a leader yields with no sign of other
// appenders, to see whether some would queue.
const yieldProbe = 64

// leadRound appends everything queued, as one batch, and hands the lead
// on to whoever queued meanwhile. The caller's own request is in the
// round (it was queued first, or was first in the queue when it was
// handed the lead); it is not woken. Where there are other appenders
// (the lead was handed on, the last round combined, or now and then to
// find out), the leader first lets those that are runnable queue up: on
// few cores they run only when it yields. A lone appender yields once in
// yieldProbe appends.
func (l *Log) leadRound(yield bool) {
	c := &l.comb
	if yield {
		runtime.Gosched()
	}
	l.mu.Lock()
	c.mu.Lock()
	round := c.waiting
	c.waiting, c.spare = c.spare[:0], nil // the round's slice is not reused until it is done
	c.mu.Unlock()
	l.appendRoundLocked(round)
	c.rounds++
	c.calls += int64(len(round))
	l.mu.Unlock()

	c.mu.Lock()
	c.combining = len(round) > 1
	var next *appendReq
	if len(c.waiting) > 0 {
		next = c.waiting[0]
	} else {
		c.leading = false
	}
	c.mu.Unlock()
	for _, r := range round {
		if !r.lead {
			r.wake <- struct{}{}
		}
	}
	clear(round)
	c.mu.Lock()
	if c.spare == nil {
		c.spare = round[:0]
	}
	c.mu.Unlock()
	if next != nil {
		next.lead = true
		next.wake <- struct{}{}
	}
}

// appendRoundLocked writes the records of a round's requests, each
// checked on its own, setting each one's offsets or error. mu is held.
func (l *Log) appendRoundLocked(round []*appendReq) {
	if err := l.writableLocked(); err != nil {
		for _, r := range round {
			r.err = err
		}
		return
	}
	now := l.o.Now() // one clock read for the round
	head := l.head.Load()
	recs := l.comb.recs[:0]
	for _, r := range round {
		if err := l.checkRecordTimestamps(r.recs, now); err != nil {
			r.err = l.refuse(err)
			continue
		}
		r.first = head + int64(len(recs))
		recs = append(recs, r.recs...)
		r.end = head + int64(len(recs))
	}
	err := l.appendRecordsLocked(recs, now)
	clear(recs) // drop the callers' buffers
	l.comb.recs = recs[:0]
	if err == nil {
		return
	}
	written := l.head.Load()
	for _, r := range round {
		if r.err == nil && r.end > written {
			r.err = err
		}
	}
}
