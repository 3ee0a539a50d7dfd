package web

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/acl"
	"github.com/passbook-log/passbook/storage"
)

// GET /api/topics
func (s *Server) listTopics(w http.ResponseWriter, r *http.Request) error {
	if s.closed.Load() {
		return passbook.ErrClosed
	}
	out := []passbook.TopicInfo{}
	for _, t := range s.db.Topics() {
		if s.mayDescribeTopic(r, t.Name()) {
			out = append(out, t.Describe())
		}
	}
	return writeJSON(w, http.StatusOK, map[string]any{"topics": out})
}

// createRequest is the body of POST /api/topics.
type createRequest struct {
	Name   string          `json:"name"`
	Config json.RawMessage `json:"config"`
}

// POST /api/topics
func (s *Server) createTopic(w http.ResponseWriter, r *http.Request) error {
	var req createRequest
	if err := s.decodeJSON(w, r, &req); err != nil {
		return err
	}
	if err := passbook.ValidTopicName(req.Name); err != nil {
		return err
	}
	// As CreateTopics: CREATE on the cluster, else on the topic.
	if !s.allowed(r, acl.Create, acl.Cluster, acl.ClusterName) {
		if err := s.require(r, acl.Create, acl.Topic, req.Name); err != nil {
			return err
		}
	}
	var cfg passbook.TopicConfig
	if len(req.Config) > 0 && string(req.Config) != "null" {
		if err := checkConfigKeys(req.Config); err != nil {
			return err
		}
		if err := json.Unmarshal(req.Config, &cfg); err != nil {
			return errorf(http.StatusBadRequest, CodeInvalidConfig, "config: %s", trimPrefix(err.Error()))
		}
	}
	if s.closed.Load() {
		return passbook.ErrClosed
	}
	t, err := s.db.CreateTopic(req.Name, cfg)
	if err != nil {
		return err
	}
	s.log.Info("http: created topic", "topic", req.Name, "partitions", t.Partitions())
	w.Header().Set("Location", "/api/topics/"+url.PathEscape(req.Name))
	return writeJSON(w, http.StatusCreated, t.Describe())
}

// checkConfigKeys refuses config keys TopicConfig does not have (its JSON
// form is lenient), so a typo is not silently a default.
func checkConfigKeys(raw json.RawMessage) error {
	var got map[string]json.RawMessage
	if err := json.Unmarshal(raw, &got); err != nil {
		return errorf(http.StatusBadRequest, CodeMalformedJSON, "config must be a JSON object: %s", err)
	}
	b, _ := json.Marshal(passbook.TopicConfig{})
	var known map[string]json.RawMessage
	json.Unmarshal(b, &known)
	var names []string
	for k := range known {
		names = append(names, k)
	}
	slices.Sort(names)
	for k := range got {
		if _, ok := known[k]; !ok {
			return errorf(http.StatusBadRequest, CodeInvalidConfig, "unknown config key %q (known: %s)", k, strings.Join(names, ", "))
		}
	}
	return nil
}

// GET /api/topics/{topic}
func (s *Server) describeTopic(w http.ResponseWriter, r *http.Request) error {
	t, err := s.topic(r)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, t.Describe())
}

// DELETE /api/topics/{topic}
func (s *Server) deleteTopic(w http.ResponseWriter, r *http.Request) error {
	t, err := s.topic(r)
	if err != nil {
		return err
	}
	if err := s.db.DeleteTopic(r.Context(), t.Name()); err != nil {
		return err
	}
	s.m.forgetTopic(t.Name())
	s.log.Info("http: deleted topic", "topic", t.Name())
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// GET /api/topics/{topic}/partitions/{partition}
func (s *Server) describePartition(w http.ResponseWriter, r *http.Request) error {
	t, p, _, err := s.partition(r)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, t.Describe().Partitions[p])
}

// partition looks up the {topic} and {partition} path values.
func (s *Server) partition(r *http.Request) (*passbook.Topic, int32, *storage.Log, error) {
	t, err := s.topic(r)
	if err != nil {
		return nil, 0, nil, err
	}
	p, err := parsePartition(r.PathValue("partition"))
	if err != nil {
		return nil, 0, nil, err
	}
	l, err := t.Partition(p)
	if err != nil {
		return nil, 0, nil, err
	}
	return t, p, l, nil
}

func parsePartition(s string) (int32, error) {
	p, err := strconv.ParseInt(s, 10, 32)
	if err != nil || p < 0 {
		return 0, badRequest("partition %q is not a partition number (0, 1, 2, …)", s)
	}
	return int32(p), nil
}
