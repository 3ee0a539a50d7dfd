package web

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/consumer"
	"github.com/passbook-log/passbook/offsets"
	"github.com/passbook-log/passbook/storage"
)

// httpHolder names the HTTP API as a lease holder in errors and in the
// lease table while it moves a consumer's offsets.
const httpHolder = "passbook-http"

// consumerTopic is one consumer's standing on one topic.
type consumerTopic struct {
	Topic      string                  `json:"topic"`
	Lag        int64                   `json:"lag"`
	Missed     int64                   `json:"missed"`
	Updated    *time.Time              `json:"updated,omitempty"` // the latest commit
	Partitions []consumer.PartitionLag `json:"partitions,omitempty"`
}

// consumerInfo is a consumer and where it stands on each topic.
type consumerInfo struct {
	Name   string          `json:"name"`
	Lag    int64           `json:"lag"`
	Topics []consumerTopic `json:"topics"`
}

func validConsumerName(name string) error {
	if name == "" || len(name) > 249 || !utf8.ValidString(name) {
		return errorf(http.StatusBadRequest, CodeInvalidName, "consumer name %q: want 1 to 249 characters of UTF-8", name)
	}
	for _, r := range name {
		if unicode.IsControl(r) {
			return errorf(http.StatusBadRequest, CodeInvalidName, "consumer name %q has a control character", name)
		}
	}
	return nil
}

// consumers reads the committed offsets (of one consumer when name is
// set) and works out each consumer's lag with consumer.LagOf: a
// partition with nothing committed counts everything kept as lag.
func (s *Server) consumers(r *http.Request, name string, withPartitions bool) ([]consumerInfo, error) {
	if s.closed.Load() {
		return nil, passbook.ErrClosed
	}
	entries, err := s.db.Offsets().List(r.Context(), offsets.Filter{Consumer: name})
	if err != nil {
		return nil, err
	}
	var out []consumerInfo
	for i := 0; i < len(entries); {
		// Entries come sorted by consumer, topic, partition.
		j := i
		for j < len(entries) && entries[j].Consumer == entries[i].Consumer && entries[j].Topic == entries[i].Topic {
			j++
		}
		group := entries[i:j]
		i = j
		if !s.mayDescribeGroup(r, group[0].Consumer, group[0].Topic) {
			continue // the ACLs hide it (authz.go)
		}
		t, err := s.db.Topic(group[0].Topic)
		if err != nil {
			continue // offsets of a deleted topic
		}
		ct := consumerTopic{Topic: t.Name()}
		committed := map[int32]int64{}
		var updated time.Time
		for _, e := range group {
			committed[e.Partition] = e.Offset
			if e.UpdatedAt.After(updated) {
				updated = e.UpdatedAt
			}
		}
		ct.Updated = &updated
		for p := range t.Partitions() {
			l, err := t.Partition(int32(p))
			if err != nil { // fenced: no extent to show
				continue
			}
			c, ok := committed[int32(p)]
			if !ok {
				c = -1
			}
			pl := consumer.NewStableLag(group[0].Consumer, t.Name(), int32(p), c, l.StartOffset(), l.LastStableOffset(), l.Head())
			ct.Lag += pl.Lag
			ct.Missed += pl.Missed
			if withPartitions {
				ct.Partitions = append(ct.Partitions, pl)
			}
		}
		if n := len(out); n == 0 || out[n-1].Name != group[0].Consumer {
			out = append(out, consumerInfo{Name: group[0].Consumer, Topics: []consumerTopic{}})
		}
		c := &out[len(out)-1]
		c.Topics = append(c.Topics, ct)
		c.Lag += ct.Lag
	}
	return out, nil
}

// GET /api/consumers
func (s *Server) listConsumers(w http.ResponseWriter, r *http.Request) error {
	cs, err := s.consumers(r, "", false)
	if err != nil {
		return err
	}
	if cs == nil {
		cs = []consumerInfo{}
	}
	return writeJSON(w, http.StatusOK, map[string]any{"consumers": cs})
}

// GET /api/consumers/{consumer}
func (s *Server) describeConsumer(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("consumer")
	if err := validConsumerName(name); err != nil {
		return err
	}
	cs, err := s.consumers(r, name, true)
	if err != nil {
		return err
	}
	if len(cs) == 0 {
		return errorf(http.StatusNotFound, CodeUnknownConsumer, "consumer %q has committed no offset on any topic", name)
	}
	return writeJSON(w, http.StatusOK, cs[0])
}

// consumerAndTopic looks up the {consumer} and {topic} path values.
func (s *Server) consumerAndTopic(r *http.Request) (string, *passbook.Topic, error) {
	name := r.PathValue("consumer")
	if err := validConsumerName(name); err != nil {
		return "", nil, err
	}
	t, err := s.topic(r)
	return name, t, err
}

// GET /api/consumers/{consumer}/topics/{topic}
func (s *Server) consumerLag(w http.ResponseWriter, r *http.Request) error {
	name, t, err := s.consumerAndTopic(r)
	if err != nil {
		return err
	}
	entries, err := s.db.Offsets().List(r.Context(), offsets.Filter{Consumer: name, Topic: t.Name()})
	if err != nil {
		return err
	}
	if len(entries) == 0 {
		return errorf(http.StatusNotFound, CodeUnknownConsumer, "consumer %q has committed no offset on topic %s", name, t.Name())
	}
	lag, err := consumer.Lag(r.Context(), s.db.Offsets(), t, name)
	if err != nil {
		return err
	}
	ct := consumerTopic{Topic: t.Name(), Partitions: lag}
	for _, pl := range lag {
		ct.Lag += pl.Lag
		ct.Missed += pl.Missed
	}
	return writeJSON(w, http.StatusOK, consumerLagResponse{Consumer: name, Topic: ct.Topic, Lag: ct.Lag, Missed: ct.Missed, Partitions: ct.Partitions})
}

// commitRequest is the body of a commit.
type commitRequest struct {
	Offsets []position `json:"offsets"` // offset: the next offset to read
}

// POST /api/consumers/{consumer}/topics/{topic}/commit
//
// Commits the offsets in one transaction, under the consumer's lease:
// refused (409 lease_held) while the consumer runs elsewhere.
func (s *Server) commitOffsets(w http.ResponseWriter, r *http.Request) error {
	name, t, err := s.consumerAndTopic(r)
	if err != nil {
		return err
	}
	var req commitRequest
	if err := s.decodeJSON(w, r, &req); err != nil {
		return err
	}
	if len(req.Offsets) == 0 {
		return badRequest(`no offsets: the body must be {"offsets": [{"partition": 0, "offset": 42}, …]}`)
	}
	commit := map[offsets.Key]int64{}
	for _, o := range req.Offsets {
		l, err := t.Partition(o.Partition)
		if err != nil {
			return err
		}
		// The committed offset is the next to read: the head at most.
		// One below the log start is allowed (retention may have moved
		// it meanwhile); lag then reports the records missed.
		if head := l.Head(); o.Offset < 0 || o.Offset > head {
			return &storage.OutOfRangeError{Offset: o.Offset, Start: l.StartOffset(), Head: head}
		}
		commit[offsets.Key{Consumer: name, Topic: t.Name(), Partition: o.Partition}] = o.Offset
	}
	store := s.db.Offsets()
	lease, err := store.Acquire(r.Context(), name, t.Name(), httpHolder, 10*time.Second)
	if err != nil {
		return fmt.Errorf("consumer %s on %s: cannot commit while it runs elsewhere: %w", name, t.Name(), err)
	}
	defer store.Release(r.Context(), lease)
	if err := store.CommitMany(r.Context(), commit); err != nil {
		return err
	}
	out := make([]position, 0, len(commit))
	for k, off := range commit {
		out = append(out, position{Partition: k.Partition, Offset: off})
	}
	slices.SortFunc(out, func(a, b position) int { return cmp.Compare(a.Partition, b.Partition) })
	return writeJSON(w, http.StatusOK, offsetsResponse{Consumer: name, Topic: t.Name(), Offsets: out})
}

// consumerLagResponse is a consumer's standing on one topic.
type consumerLagResponse struct {
	Consumer   string                  `json:"consumer"`
	Topic      string                  `json:"topic"`
	Lag        int64                   `json:"lag"`
	Missed     int64                   `json:"missed"`
	Partitions []consumer.PartitionLag `json:"partitions"`
}

// offsetsResponse is the answer to a commit or a reset: the offsets now
// committed.
type offsetsResponse struct {
	Consumer string     `json:"consumer"`
	Topic    string     `json:"topic"`
	Offsets  []position `json:"offsets"`
}

// resetRequest is the body of a reset.
type resetRequest struct {
	To         json.RawMessage `json:"to"`         // "earliest", "latest", an offset, or an RFC 3339 time
	Partitions []int32         `json:"partitions"` // default: all
}

// POST /api/consumers/{consumer}/topics/{topic}/reset
//
// Moves the consumer's committed offsets (consumer.Seek): replay from
// earliest, skip to latest, or go to an offset or a time.
func (s *Server) resetOffsets(w http.ResponseWriter, r *http.Request) error {
	name, t, err := s.consumerAndTopic(r)
	if err != nil {
		return err
	}
	var req resetRequest
	if err := s.decodeJSON(w, r, &req); err != nil {
		return err
	}
	var to string
	var n int64
	switch {
	case len(req.To) == 0:
		return badRequest(`"to" is required: "earliest", "latest", an offset or an RFC 3339 time`)
	case json.Unmarshal(req.To, &to) == nil:
	case json.Unmarshal(req.To, &n) == nil:
		to = strconv.FormatInt(n, 10)
	default:
		return badRequest(`"to" must be a string or an offset, not %s`, req.To)
	}
	start, err := consumer.ParseStart(to)
	if err != nil {
		return err
	}
	moved, err := consumer.Seek(r.Context(), s.db.Offsets(), t, name, start, req.Partitions)
	if err != nil {
		return err
	}
	out := make([]position, 0, len(moved))
	for p, off := range moved {
		out = append(out, position{Partition: p, Offset: off})
	}
	slices.SortFunc(out, func(a, b position) int { return cmp.Compare(a.Partition, b.Partition) })
	s.log.Info("http: reset consumer", "consumer", name, "topic", t.Name(), "to", to)
	return writeJSON(w, http.StatusOK, offsetsResponse{Consumer: name, Topic: t.Name(), Offsets: out})
}
