package web

import (
	"net/http"
	"time"

	"github.com/passbook-log/passbook/acl"
)

// series is a per-second history of one figure, oldest first.
type series struct {
	T []int64 `json:"t"` // Unix ms
	V []int64 `json:"v"`
}

func (s *series) add(t, v int64, window time.Duration) {
	s.T = append(s.T, t)
	s.V = append(s.V, v)
	cut := 0
	for cut < len(s.T) && s.T[cut] < t-window.Milliseconds() {
		cut++
	}
	if cut > 0 && cut >= len(s.T)/4 {
		// Trim in bulk, so appends stay amortized O(1).
		s.T = append(s.T[:0], s.T[cut:]...)
		s.V = append(s.V[:0], s.V[cut:]...)
	}
}

// since copies the points not older than the window.
func (s *series) since(from int64) series {
	i := 0
	for i < len(s.T) && s.T[i] < from {
		i++
	}
	return series{T: append([]int64{}, s.T[i:]...), V: append([]int64{}, s.V[i:]...)}
}

// sampleLocked records a point for every topic and consumer group, and
// forgets the series of those gone.
func (h *hub) sampleLocked(st *dashState, now time.Time) *sample {
	h.mu.lastSample = now
	w := h.s.o.HistoryWindow
	smp := &sample{T: st.T, Heads: map[string]int64{}, Lags: []groupLag{}}
	for name, t := range st.Topics {
		var sum int64
		for _, p := range t.Partitions {
			sum += p.Head
		}
		smp.Heads[name] = sum
		sr := h.mu.hist[name]
		if sr == nil {
			sr = &series{}
			h.mu.hist[name] = sr
		}
		sr.add(st.T, sum, w)
	}
	for name := range h.mu.hist {
		if st.Topics[name] == nil {
			delete(h.mu.hist, name)
		}
	}
	for _, k := range sortedGroups(st.Groups) {
		g := st.Groups[k]
		lag := g.lag()
		smp.Lags = append(smp.Lags, groupLag{Consumer: k.consumer, Topic: k.topic, Lag: lag})
		sr := h.mu.lagHist[k]
		if sr == nil {
			sr = &series{}
			h.mu.lagHist[k] = sr
		}
		sr.add(st.T, lag, w)
	}
	for k := range h.mu.lagHist {
		if st.Groups[k] == nil {
			delete(h.mu.lagHist, k)
		}
	}
	return smp
}

// GET /api/history?topic=NAME | ?consumer=NAME [&since=DURATION]
//
// A topic's history is its records ever appended (the sum of its heads),
// one point a second: the dashboard draws the rate from it. A consumer's
// is its lag on each topic it has offsets on.
func (s *Server) history(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	topic, cons := q.Get("topic"), q.Get("consumer")
	if (topic == "") == (cons == "") {
		return badRequest("give exactly one of topic= or consumer=")
	}
	window := s.o.HistoryWindow
	if v := q.Get("since"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return badRequest("since %q: want a duration such as 5m", v)
		}
		window = min(d, window)
	}
	from := time.Now().Add(-window).UnixMilli()
	h := s.hub
	if topic != "" {
		if err := s.require(r, acl.Describe, acl.Topic, topic); err != nil {
			return err
		}
		if _, err := s.db.Topic(topic); err != nil {
			return err
		}
		h.mu.Lock()
		var out series
		if sr := h.mu.hist[topic]; sr != nil {
			out = sr.since(from)
		}
		h.mu.Unlock()
		if out.T == nil {
			out = series{T: []int64{}, V: []int64{}}
		}
		return writeJSON(w, http.StatusOK, map[string]any{"topic": topic, "records": out})
	}
	if err := validConsumerName(cons); err != nil {
		return err
	}
	if err := s.require(r, acl.Describe, acl.Group, cons); err != nil {
		return err
	}
	lags := map[string]series{}
	h.mu.Lock()
	for k, sr := range h.mu.lagHist {
		if k.consumer == cons {
			lags[k.topic] = sr.since(from)
		}
	}
	h.mu.Unlock()
	for topic := range lags {
		if !s.mayDescribeTopic(r, topic) {
			delete(lags, topic)
		}
	}
	return writeJSON(w, http.StatusOK, map[string]any{"consumer": cons, "lag": lags})
}
