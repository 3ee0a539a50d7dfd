package web

import (
	"encoding/json"
	"errors"
	"net/http"
	"sync"

	"github.com/passbook-log/passbook/acl"
)

// Authorization (Options.Authorizer): each endpoint asks the ACLs what
// the Kafka API that does the same asks, for the principal of the
// request (User:name, or User:ANONYMOUS) from its remote IP:
//
//	GET    /api/topics                              only topics with DESCRIBE are listed
//	POST   /api/topics                              CREATE on the cluster or on the topic (CreateTopics)
//	GET    /api/topics/{topic}                      DESCRIBE on the topic (Metadata)
//	DELETE /api/topics/{topic}                      DELETE on the topic (DeleteTopics)
//	POST   …/records                                WRITE on the topic (Produce)
//	GET    …/partitions/{p}                         DESCRIBE on the topic
//	GET    …/partitions/{p}/records, …/stream       READ on the topic (Fetch)
//	GET    /api/consumers                           only consumers with DESCRIBE on the group, and of them
//	                                                only topics with DESCRIBE (OffsetFetch, DescribeGroups)
//	GET    /api/consumers/{c}                       DESCRIBE on the group; topics filtered by DESCRIBE
//	GET    /api/consumers/{c}/topics/{t}            DESCRIBE on the group and on the topic
//	POST   /api/consumers/{c}/topics/{t}/commit     READ on the group and on the topic (OffsetCommit)
//	POST   /api/consumers/{c}/topics/{t}/reset      READ on the group and on the topic
//	GET    /api/events                              filtered: only topics, and consumer groups on topics,
//	                                                the principal may DESCRIBE
//	GET    /api/history                             topic=: DESCRIBE on the topic; consumer=: DESCRIBE on
//	                                                the group, lags of topics with DESCRIBE only
//	GET    /metrics                                 with Options.MetricsAuth: DESCRIBE on the cluster
//
// A consumer's name is its group's. The check comes before the lookup,
// as in Kafka: a topic the principal may not DESCRIBE is 403 whether it
// exists or not, so the answer does not tell. A denial is 403 forbidden
// naming the operation and the resource, counted in
// passbook_http_authorization_denied_total.

// need is one permission a request needs.
type need struct {
	op   acl.Operation
	rt   acl.ResourceType
	name string
}

func topicNeed(op acl.Operation) func(*http.Request) []need {
	return func(r *http.Request) []need { return []need{{op, acl.Topic, r.PathValue("topic")}} }
}

func groupTopicNeed(op acl.Operation) func(*http.Request) []need {
	return func(r *http.Request) []need {
		return []need{{op, acl.Group, r.PathValue("consumer")}, {op, acl.Topic, r.PathValue("topic")}}
	}
}

// inHandler marks a route whose handler checks or filters by itself.
func inHandler(*http.Request) []need { return nil }

// routeNeeds is what each route needs of the ACLs before its handler
// runs. Every route has an entry (TestAuthz_EveryRouteDecides): a new
// endpoint must say.
var routeNeeds = map[string]func(*http.Request) []need{
	"GET /api/topics":                                         inHandler, // filtered by DESCRIBE
	"POST /api/topics":                                        inHandler, // CREATE on the cluster or the topic of the body
	"GET /api/topics/{topic}":                                 topicNeed(acl.Describe),
	"DELETE /api/topics/{topic}":                              topicNeed(acl.Delete),
	"POST /api/topics/{topic}/records":                        topicNeed(acl.Write),
	"GET /api/topics/{topic}/partitions/{partition}":          topicNeed(acl.Describe),
	"POST /api/topics/{topic}/partitions/{partition}/records": topicNeed(acl.Write),
	"GET /api/topics/{topic}/partitions/{partition}/records":  topicNeed(acl.Read),
	"GET /api/topics/{topic}/partitions/{partition}/stream":   topicNeed(acl.Read),
	"GET /api/consumers":                                      inHandler, // filtered
	"GET /api/consumers/{consumer}": func(r *http.Request) []need {
		return []need{{acl.Describe, acl.Group, r.PathValue("consumer")}} // topics filtered
	},
	"GET /api/consumers/{consumer}/topics/{topic}":         groupTopicNeed(acl.Describe),
	"POST /api/consumers/{consumer}/topics/{topic}/commit": groupTopicNeed(acl.Read),
	"POST /api/consumers/{consumer}/topics/{topic}/reset":  groupTopicNeed(acl.Read),
	"GET /api/events":       inHandler, // filtered (eventFilter)
	"GET /api/history":      inHandler, // by its query
	"GET /api/openapi.json": nil,       // open: it describes the API
	"POST /api/login":       nil,
	"POST /api/logout":      nil,
	"GET /api/whoami":       nil,
	"GET /healthz":          nil,
	"GET /readyz":           nil,
	"GET /metrics": func(*http.Request) []need {
		return []need{{acl.Describe, acl.Cluster, acl.ClusterName}} // only with MetricsAuth (see authorizeRoute)
	},
}

// allowed asks the ACLs whether r's principal may do op on the resource.
func (s *Server) allowed(r *http.Request, op acl.Operation, rt acl.ResourceType, name string) bool {
	return s.o.Authorizer.Allowed(identityOf(r).principal(), clientOf(r), op, rt, name)
}

// require is nil if r's principal may do op on the resource, else the
// 403 to answer.
func (s *Server) require(r *http.Request, op acl.Operation, rt acl.ResourceType, name string) error {
	if s.allowed(r, op, rt, name) {
		return nil
	}
	return s.forbidden(r, need{op, rt, name})
}

func (s *Server) forbidden(r *http.Request, n need) error {
	p := identityOf(r).principal()
	s.authn.denials.WithLabelValues(n.op.String(), n.rt.String()).Inc()
	s.log.Info("http: denied by the ACLs", "principal", p, "host", clientOf(r), "operation", n.op.String(),
		"resource_type", n.rt.String(), "resource", n.name, "method", r.Method, "path", r.URL.Path)
	e := errorf(http.StatusForbidden, CodeForbidden, "%s may not %s %s %s (passbook acl add grants it)", p, n.op, n.rt, n.name)
	e.Details = map[string]any{"principal": p, "operation": n.op.String(), "resource_type": n.rt.String(), "resource": n.name}
	return e
}

// authorizeRoute checks what the route of pattern needs before its
// handler runs.
func (s *Server) authorizeRoute(pattern string, r *http.Request) error {
	if !s.o.Authorizer.Enabled() {
		return nil
	}
	if pattern == "GET /metrics" && !s.o.MetricsAuth {
		return nil
	}
	f, ok := routeNeeds[pattern]
	if !ok {
		return errors.New("web: no ACL rule for " + pattern) // TestAuthz_EveryRouteDecides keeps this from happening
	}
	if f == nil {
		return nil
	}
	for _, n := range f(r) {
		if !s.allowed(r, n.op, n.rt, n.name) {
			return s.forbidden(r, n)
		}
	}
	return nil
}

// mayDescribeTopic: r's principal may see topic in lists.
func (s *Server) mayDescribeTopic(r *http.Request, topic string) bool {
	return s.allowed(r, acl.Describe, acl.Topic, topic)
}

// mayDescribeGroup: r's principal may see consumer name's offsets on
// topic (DESCRIBE on the group and on the topic).
func (s *Server) mayDescribeGroup(r *http.Request, consumer, topic string) bool {
	return s.allowed(r, acl.Describe, acl.Group, consumer) && s.mayDescribeTopic(r, topic)
}

// eventFilter cuts what one /api/events subscriber may not see out of
// the hub's messages, which are the same for everyone: topics without
// DESCRIBE, and consumer groups without DESCRIBE on the group or on its
// topic. It follows the topics it has sent whole: a topic that becomes
// visible in the middle of the stream (an ACL added) arrives as a change
// of some partitions only, which the page cannot draw, so the stream is
// ended (the page reconnects and gets a snapshot); a topic no longer
// visible is sent as removed.
type eventFilter struct {
	s    *Server
	r    *http.Request
	sent map[string]bool // topics sent whole
}

// eventFilterFor is the filter of r's stream, nil when every principal
// sees everything (no ACLs).
func (s *Server) eventFilterFor(r *http.Request) *eventFilter {
	if !s.o.Authorizer.Enabled() || s.o.Authorizer.SuperUser(identityOf(r).principal()) {
		return nil
	}
	return &eventFilter{s: s, r: r, sent: map[string]bool{}}
}

// decodedEvent is the last hub message decoded for the filters: the hub
// sends every subscriber the same bytes, so each is decoded once, not
// once per subscriber. The filters only read it.
type decodedEvent struct {
	mu  sync.Mutex
	key *byte // the message's first byte
	n   int
	u   *update
}

func (s *Server) decodeEvent(b []byte) (*update, error) {
	if len(b) == 0 {
		return nil, errors.New("an empty event")
	}
	d := &s.decoded
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.key == &b[0] && d.n == len(b) {
		return d.u, nil
	}
	var u update
	if err := json.Unmarshal(b, &u); err != nil {
		return nil, err
	}
	d.key, d.n, d.u = &b[0], len(b), &u
	return &u, nil
}

// errResubscribe ends a filtered stream that must start again.
var errResubscribe = errors.New("the principal's view changed: reconnect for a new snapshot")

// filter returns the message for this subscriber (b itself when f is
// nil), or errResubscribe.
func (f *eventFilter) filter(b []byte) ([]byte, error) {
	if f == nil {
		return b, nil
	}
	u, err := f.s.decodeEvent(b)
	if err != nil {
		return nil, err
	}
	visible := map[string]bool{}
	may := func(topic string) bool {
		v, ok := visible[topic]
		if !ok {
			v = f.s.mayDescribeTopic(f.r, topic)
			visible[topic] = v
		}
		return v
	}
	out := update{T: u.T, Topics: []*topicState{}, Groups: []*consumerGroup{}}
	for _, t := range u.Topics {
		if !may(t.Name) {
			continue
		}
		if t.Config == nil && !f.sent[t.Name] {
			return nil, errResubscribe
		}
		f.sent[t.Name] = true
		out.Topics = append(out.Topics, t)
	}
	for _, name := range u.RemovedTopics {
		if f.sent[name] {
			delete(f.sent, name)
			out.RemovedTopics = append(out.RemovedTopics, name)
		}
	}
	for name := range f.sent {
		if !may(name) { // an ACL removed meanwhile
			delete(f.sent, name)
			out.RemovedTopics = append(out.RemovedTopics, name)
		}
	}
	groups := map[string]bool{}
	group := func(consumer, topic string) bool {
		if !f.sent[topic] {
			return false
		}
		v, ok := groups[consumer]
		if !ok {
			v = f.s.allowed(f.r, acl.Describe, acl.Group, consumer)
			groups[consumer] = v
		}
		return v
	}
	for _, g := range u.Groups {
		if group(g.Consumer, g.Topic) {
			out.Groups = append(out.Groups, g)
		}
	}
	for _, g := range u.RemovedGroups {
		if group(g.Consumer, g.Topic) {
			out.RemovedGroups = append(out.RemovedGroups, g)
		}
	}
	if u.Sample != nil {
		smp := &sample{T: u.Sample.T, Heads: map[string]int64{}, Lags: []groupLag{}}
		for name, h := range u.Sample.Heads {
			if f.sent[name] {
				smp.Heads[name] = h
			}
		}
		for _, l := range u.Sample.Lags {
			if group(l.Consumer, l.Topic) {
				smp.Lags = append(smp.Lags, l)
			}
		}
		out.Sample = smp
	}
	return json.Marshal(out)
}
