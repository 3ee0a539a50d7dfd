package web

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/consumer"
	"github.com/passbook-log/passbook/offsets"
)

// The dashboard's live picture comes from one goroutine, the hub: every
// Options.EventInterval it reads every partition's extent and every
// committed offset, and sends the subscribers (/api/events streams) what
// changed since the last look. A new subscriber first gets the whole
// picture (event "snapshot"), then the changes ("update"). Once a second
// the hub also records a sample (each topic's records, each consumer's
// lag) into the history that /api/history serves for the charts.
//
// A subscriber too slow to take its updates is dropped; its browser
// reconnects and starts again from a snapshot.

// dashState is the picture at one moment.
type dashState struct {
	T      int64                       // Unix ms
	Topics map[string]*topicState      // by name
	Groups map[groupKey]*consumerGroup // a consumer's offsets on one topic
}

type topicState struct {
	Name       string                `json:"name"`
	Config     *passbook.TopicConfig `json:"config,omitempty"` // new topics only, in updates
	Partitions []partState           `json:"partitions"`
}

type partState struct {
	P        int32 `json:"p"`
	Start    int64 `json:"start"`
	Head     int64 `json:"head"`
	Bytes    int64 `json:"bytes"`
	Segments int   `json:"segments"`
	// Cleaned is, on a compacted topic, the first offset the cleaner has
	// not reached: below it only each key's newest record is kept, and the
	// offsets between them are gaps.
	Cleaned int64 `json:"cleaned,omitempty"`
	// Stable is the last stable offset, where read_committed readers stop
	// (the first offset of the oldest open transaction, else Head): lag
	// counts up to it, as consumer.Lag does.
	Stable int64 `json:"stable"`
	// Fenced says why the partition could not be opened (it serves
	// nothing until repaired); Unwritable why it refuses appends now.
	Fenced     string `json:"fenced,omitempty"`
	Unwritable string `json:"unwritable,omitempty"`
}

type groupKey struct{ consumer, topic string }

// consumerGroup is one consumer's committed offsets on one topic, and
// its lag on each partition as consumer.LagOf counts it: the dashboard
// shows these, it does not count them itself.
type consumerGroup struct {
	Consumer  string  `json:"consumer"`
	Topic     string  `json:"topic"`
	Committed []int64 `json:"committed"` // per partition; −1: nothing committed
	Lag       []int64 `json:"lag"`       // per partition
	Missed    []int64 `json:"missed"`    // per partition: deleted by retention before this consumer read them
	Updated   int64   `json:"updated"`   // Unix ms of the latest commit
}

// count works out the group's lag on each of t's partitions (0 on a
// fenced one: it has no extent to count from).
func (g *consumerGroup) count(t *topicState) {
	g.Lag, g.Missed = make([]int64, len(g.Committed)), make([]int64, len(g.Committed))
	for p, c := range g.Committed {
		if ps := t.Partitions[p]; ps.Fenced == "" {
			g.Lag[p], g.Missed[p] = consumer.LagOf(c, ps.Start, ps.Stable)
		}
	}
}

// lag is the group's lag summed over partitions.
func (g *consumerGroup) lag() int64 {
	var n int64
	for _, l := range g.Lag {
		n += l
	}
	return n
}

// update is the body of a snapshot or update event.
type update struct {
	T             int64            `json:"t"`
	Topics        []*topicState    `json:"topics"`                   // new topics whole; changed ones with their changed partitions
	RemovedTopics []string         `json:"removed_topics,omitempty"` //
	Groups        []*consumerGroup `json:"groups"`                   // new or changed (offsets or lag), whole
	RemovedGroups []groupRef       `json:"removed_groups,omitempty"` //
	Sample        *sample          `json:"sample,omitempty"`         // once a second
}

type groupRef struct {
	Consumer string `json:"consumer"`
	Topic    string `json:"topic"`
}

// sample is one point of the charts' history.
type sample struct {
	T     int64            `json:"t"`
	Heads map[string]int64 `json:"heads"` // topic → records ever appended (sum of heads)
	Lags  []groupLag       `json:"lags"`
}

type groupLag struct {
	Consumer string `json:"consumer"`
	Topic    string `json:"topic"`
	Lag      int64  `json:"lag"`
}

type hub struct {
	s    *Server
	quit chan struct{}
	done chan struct{}

	mu struct {
		sync.Mutex
		last       *dashState
		subs       map[*subscriber]struct{}
		hist       map[string]*series   // topic → sum of heads
		lagHist    map[groupKey]*series // consumer on topic → lag
		lastSample time.Time
	}
}

type subscriber struct{ ch chan []byte }

func newHub(s *Server) *hub {
	h := &hub{s: s, quit: make(chan struct{}), done: make(chan struct{})}
	h.mu.subs = map[*subscriber]struct{}{}
	h.mu.hist = map[string]*series{}
	h.mu.lagHist = map[groupKey]*series{}
	go h.run()
	return h
}

func (h *hub) stop() {
	close(h.quit)
	<-h.done
	h.mu.Lock()
	for sub := range h.mu.subs {
		close(sub.ch)
		delete(h.mu.subs, sub)
	}
	h.mu.Unlock()
}

func (h *hub) run() {
	defer close(h.done)
	t := time.NewTicker(h.s.o.EventInterval)
	defer t.Stop()
	h.tick()
	for {
		select {
		case <-h.quit:
			return
		case <-t.C:
			h.tick()
		}
	}
}

// tick looks at the state when someone is watching or a sample is due,
// and sends the subscribers what changed.
func (h *hub) tick() {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := time.Now()
	due := now.Sub(h.mu.lastSample) >= time.Second-h.s.o.EventInterval/2
	if len(h.mu.subs) == 0 && !due {
		return
	}
	st, err := h.collectLocked()
	if err != nil {
		return
	}
	u := diff(h.mu.last, st)
	h.mu.last = st
	if due {
		u.Sample = h.sampleLocked(st, now)
	}
	if len(u.Topics) == 0 && len(u.RemovedTopics) == 0 && len(u.Groups) == 0 && len(u.RemovedGroups) == 0 && u.Sample == nil {
		return
	}
	b, _ := json.Marshal(u)
	for sub := range h.mu.subs {
		select {
		case sub.ch <- b:
		default: // too slow: drop it; its browser reconnects
			close(sub.ch)
			delete(h.mu.subs, sub)
			h.s.m.streamsDropped.WithLabelValues("buffer_full").Inc()
		}
	}
}

// collectLocked reads the state now.
func (h *hub) collectLocked() (*dashState, error) {
	if h.s.closed.Load() {
		return nil, passbook.ErrClosed
	}
	st := &dashState{T: time.Now().UnixMilli(), Topics: map[string]*topicState{}, Groups: map[groupKey]*consumerGroup{}}
	for _, t := range h.s.db.Topics() {
		info := t.Describe()
		ts := &topicState{Name: info.Name, Config: &info.Config, Partitions: make([]partState, len(info.Partitions))}
		for i, p := range info.Partitions {
			ts.Partitions[i] = partState{P: p.Partition, Start: p.StartOffset, Head: p.Head, Stable: p.Head, Bytes: p.Bytes, Segments: p.Segments,
				Fenced: p.Fenced, Unwritable: p.Unwritable}
			if p.Fenced == "" {
				if l, err := t.Partition(p.Partition); err == nil {
					ts.Partitions[i].Stable = min(l.LastStableOffset(), p.Head)
				}
			}
			if info.Config.Compacted() {
				if l, err := t.Partition(p.Partition); err == nil {
					ts.Partitions[i].Cleaned = l.CleanerStats().CleanedTo
				}
			}
		}
		st.Topics[ts.Name] = ts
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	entries, err := h.s.db.Offsets().List(ctx, offsets.Filter{})
	if err != nil {
		if !errors.Is(err, offsets.ErrClosed) {
			h.s.log.Warn("events: list committed offsets", "err", err)
		}
		return nil, err
	}
	for _, e := range entries {
		ts := st.Topics[e.Topic]
		if ts == nil || int(e.Partition) >= len(ts.Partitions) {
			continue // offsets of a deleted topic
		}
		k := groupKey{e.Consumer, e.Topic}
		g := st.Groups[k]
		if g == nil {
			g = &consumerGroup{Consumer: e.Consumer, Topic: e.Topic, Committed: make([]int64, len(ts.Partitions))}
			for i := range g.Committed {
				g.Committed[i] = -1
			}
			st.Groups[k] = g
		}
		g.Committed[e.Partition] = e.Offset
		g.Updated = max(g.Updated, e.UpdatedAt.UnixMilli())
	}
	for k, g := range st.Groups {
		g.count(st.Topics[k.topic])
	}
	return st, nil
}

// diff is what changed from old to cur (everything when old is nil).
func diff(old, cur *dashState) *update {
	u := &update{T: cur.T, Topics: []*topicState{}, Groups: []*consumerGroup{}}
	for _, name := range slices.Sorted(maps.Keys(cur.Topics)) {
		t := cur.Topics[name]
		var o *topicState
		if old != nil {
			o = old.Topics[name]
		}
		if o == nil || len(o.Partitions) != len(t.Partitions) {
			u.Topics = append(u.Topics, t)
			continue
		}
		var changed []partState
		for i, p := range t.Partitions {
			if p != o.Partitions[i] {
				changed = append(changed, p)
			}
		}
		if changed != nil {
			u.Topics = append(u.Topics, &topicState{Name: name, Partitions: changed})
		}
	}
	if old != nil {
		for _, name := range slices.Sorted(maps.Keys(old.Topics)) {
			if cur.Topics[name] == nil {
				u.RemovedTopics = append(u.RemovedTopics, name)
			}
		}
	}
	for _, k := range sortedGroups(cur.Groups) {
		g := cur.Groups[k]
		var o *consumerGroup
		if old != nil {
			o = old.Groups[k]
		}
		if o == nil || o.Updated != g.Updated || !slices.Equal(o.Committed, g.Committed) || !slices.Equal(o.Lag, g.Lag) || !slices.Equal(o.Missed, g.Missed) {
			u.Groups = append(u.Groups, g)
		}
	}
	if old != nil {
		for _, k := range sortedGroups(old.Groups) {
			if cur.Groups[k] == nil {
				u.RemovedGroups = append(u.RemovedGroups, groupRef{k.consumer, k.topic})
			}
		}
	}
	return u
}

func sortedGroups(m map[groupKey]*consumerGroup) []groupKey {
	ks := make([]groupKey, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.SortFunc(ks, func(a, b groupKey) int {
		if a.consumer != b.consumer {
			return cmp.Compare(a.consumer, b.consumer)
		}
		return cmp.Compare(a.topic, b.topic)
	})
	return ks
}

// subscribe returns a new subscriber and the snapshot its stream starts
// with: the updates it will receive are relative to that snapshot.
func (h *hub) subscribe() (*subscriber, []byte, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.s.closed.Load() {
		return nil, nil, passbook.ErrClosed
	}
	st, err := h.collectLocked()
	if err != nil {
		return nil, nil, err
	}
	if h.mu.last != nil {
		// Send the others what changed first, so that one state is
		// the base of every subscriber's next update.
		if u := diff(h.mu.last, st); len(u.Topics)+len(u.RemovedTopics)+len(u.Groups)+len(u.RemovedGroups) > 0 {
			b, _ := json.Marshal(u)
			for sub := range h.mu.subs {
				select {
				case sub.ch <- b:
				default:
					close(sub.ch)
					delete(h.mu.subs, sub)
					h.s.m.streamsDropped.WithLabelValues("buffer_full").Inc()
				}
			}
		}
	}
	h.mu.last = st
	b, _ := json.Marshal(diff(nil, st))
	sub := &subscriber{ch: make(chan []byte, 16)}
	h.mu.subs[sub] = struct{}{}
	return sub, b, nil
}

func (h *hub) unsubscribe(sub *subscriber) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.mu.subs[sub]; ok {
		delete(h.mu.subs, sub)
		close(sub.ch)
	}
}

// GET /api/events: the dashboard's live stream.
func (s *Server) events(w http.ResponseWriter, r *http.Request) error {
	release, err := s.limits.acquire(r, true)
	if err != nil {
		return err
	}
	defer release()
	sub, snap, err := s.hub.subscribe()
	if err != nil {
		return err
	}
	defer s.hub.unsubscribe(sub)
	f := s.eventFilterFor(r) // what the ACLs let this principal see (authz.go)
	if snap, err = f.filter(snap); err != nil {
		return err
	}
	out, err := s.startSSE(w, r, time.Second)
	if err != nil {
		s.streamEnded(err)
		return nil
	}
	defer out.end()
	s.m.streams.Inc()
	defer s.m.streams.Dec()
	if err := out.event("", "snapshot", snap); err != nil {
		s.streamEnded(err)
		return nil
	}
	if err := out.flush(); err != nil {
		s.streamEnded(err)
		return nil
	}
	// Every second: has the client left? And now and then a heartbeat.
	check := time.NewTicker(min(s.o.Heartbeat, clientCheckInterval))
	defer check.Stop()
	for {
		select {
		case b, ok := <-sub.ch:
			if !ok {
				return nil // dropped, or the server closed
			}
			b, err := f.filter(b)
			if err == nil {
				err = out.event("", "update", b)
			}
			if err == nil {
				err = out.flush()
			}
			if err != nil {
				s.streamEnded(err)
				return nil
			}
		case <-check.C:
			if out.gone() {
				return nil
			}
			if time.Since(out.wrote) < s.o.Heartbeat {
				continue
			}
			if err := out.heartbeat(); err != nil {
				s.streamEnded(err)
				return nil
			}
		case <-r.Context().Done():
			return nil
		case <-s.done.Done():
			return nil
		}
	}
}
