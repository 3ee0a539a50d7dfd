package kafka

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/passbook-log/passbook"
)

// NodeID is the broker id the server gives itself: it is a cluster of one.
const NodeID = 0

// Options configure a Server. A nil or zero Options is valid: every zero
// field takes the default named in its comment.
type Options struct {
	// Advertise is the host:port that Metadata tells clients to connect
	// to. Default: the address of the listener the client came in on.
	Advertise string
	// DisableAutoCreateTopics stops Metadata from creating missing topics
	// even when the client allows it (by default it creates them, as
	// Kafka's auto.create.topics.enable=true does).
	DisableAutoCreateTopics bool
	// DefaultPartitions is the partition count of auto-created topics and
	// of CreateTopics asking for the default (−1). Default: the DB's
	// default topic configuration.
	DefaultPartitions int
	// MaxRequestBytes is the largest request frame accepted; a bigger one
	// closes its connection. Default 100 MiB.
	MaxRequestBytes int
	// MaxConnections is how many client connections may be open at once;
	// more are closed as soon as they are accepted. Default 10,000.
	MaxConnections int
	// MaxInFlight is how many requests one connection may have read and
	// not yet answered before the server stops reading from it. Default 64.
	MaxInFlight int
	// ClusterID is reported in Metadata. Default "passbook".
	ClusterID string
	// GroupMinSessionTimeout and GroupMaxSessionTimeout bound the session
	// timeout a consumer group member may ask for (Kafka's
	// group.min.session.timeout.ms and group.max.session.timeout.ms).
	// Defaults 1s and 30m: the minimum is lower than Kafka's 6s, which
	// protects a cluster from chatty clients that one broker need not
	// fear.
	GroupMinSessionTimeout time.Duration
	GroupMaxSessionTimeout time.Duration
	// ProducerStateBytes is how much of a partition's tail is read, at
	// its first idempotent produce after the server starts, to rebuild
	// the last batches of each producer, so that a retry across a restart
	// is still recognized. Default 16 MiB. See docs/kafka.md.
	ProducerStateBytes int64
	// Logger receives the server's log lines. Default: discard.
	Logger *slog.Logger
}

const (
	defaultMaxRequestBytes = 100 << 20
	defaultMaxConnections  = 10_000
	defaultMaxInFlight     = 64
)

// Validate reports what is wrong with o, if anything.
func (o *Options) Validate() error {
	var errs []error
	if o.DefaultPartitions < 0 || o.DefaultPartitions > 10_000 {
		errs = append(errs, fmt.Errorf("default partitions %d not in [1, 10000]", o.DefaultPartitions))
	}
	if o.MaxRequestBytes < 0 {
		errs = append(errs, fmt.Errorf("max request bytes %d is negative", o.MaxRequestBytes))
	}
	if o.MaxConnections < 0 {
		errs = append(errs, fmt.Errorf("max connections %d is negative", o.MaxConnections))
	}
	if o.MaxInFlight < 0 {
		errs = append(errs, fmt.Errorf("max in flight %d is negative", o.MaxInFlight))
	}
	if o.GroupMinSessionTimeout < 0 || o.GroupMaxSessionTimeout < 0 {
		errs = append(errs, fmt.Errorf("group session timeout bounds %v, %v: negative", o.GroupMinSessionTimeout, o.GroupMaxSessionTimeout))
	} else if o.GroupMaxSessionTimeout > 0 && o.GroupMinSessionTimeout > o.GroupMaxSessionTimeout {
		errs = append(errs, fmt.Errorf("group min session timeout %v is over the max %v", o.GroupMinSessionTimeout, o.GroupMaxSessionTimeout))
	}
	if o.ProducerStateBytes < 0 {
		errs = append(errs, fmt.Errorf("producer state bytes %d is negative", o.ProducerStateBytes))
	}
	if o.Advertise != "" {
		if _, _, err := splitHostPort(o.Advertise); err != nil {
			errs = append(errs, fmt.Errorf("advertise %q: %w", o.Advertise, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("kafka: invalid options: %w", err)
	}
	return nil
}

func (o *Options) withDefaults() Options {
	var c Options
	if o != nil {
		c = *o
	}
	if c.MaxRequestBytes == 0 {
		c.MaxRequestBytes = defaultMaxRequestBytes
	}
	if c.MaxConnections == 0 {
		c.MaxConnections = defaultMaxConnections
	}
	if c.MaxInFlight == 0 {
		c.MaxInFlight = defaultMaxInFlight
	}
	if c.ClusterID == "" {
		c.ClusterID = "passbook"
	}
	if c.GroupMinSessionTimeout == 0 {
		c.GroupMinSessionTimeout = defaultGroupMinSession
	}
	if c.GroupMaxSessionTimeout == 0 {
		c.GroupMaxSessionTimeout = max(defaultGroupMaxSession, c.GroupMinSessionTimeout)
	}
	if c.ProducerStateBytes == 0 {
		c.ProducerStateBytes = defaultProducerStateBytes
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Server serves the Kafka wire protocol on top of a DB: a single-node
// cluster whose broker is NodeID. It does not own the DB: close the DB
// after Shutdown returns.
type Server struct {
	db        *passbook.DB
	o         Options
	log       *slog.Logger
	groups    *coordinator
	producers *producerStates

	// polls is canceled by Shutdown and Close: long polls return early.
	polls      context.Context
	stopPolls  context.CancelFunc
	connsDone  sync.WaitGroup
	acceptDone sync.WaitGroup

	mu struct {
		sync.Mutex
		listeners map[net.Listener]struct{}
		conns     map[*conn]struct{}
		closing   bool
	}
}

// NewServer returns a Server for db. A nil opts means the defaults.
func NewServer(db *passbook.DB, opts *Options) (*Server, error) {
	if opts != nil {
		if err := opts.Validate(); err != nil {
			return nil, err
		}
	}
	o := opts.withDefaults()
	s := &Server{db: db, o: o, log: o.Logger}
	partitions := func(topic string) (int, error) {
		t, err := db.Topic(topic)
		if err != nil {
			return 0, err
		}
		return t.Partitions(), nil
	}
	s.groups = newCoordinator(db.Offsets(), partitions, o.Logger, o.GroupMinSessionTimeout, o.GroupMaxSessionTimeout)
	s.producers = newProducerStates(o.ProducerStateBytes, o.Logger)
	s.polls, s.stopPolls = context.WithCancel(context.Background())
	s.mu.listeners = map[net.Listener]struct{}{}
	s.mu.conns = map[*conn]struct{}{}
	return s, nil
}

// Serve accepts connections on ln and serves each on its own goroutines
// until Shutdown (it then returns ErrServerClosed) or until ctx is done
// (it then closes ln and every connection at once, and returns ctx.Err()).
// Serve may be called for several listeners; it always closes ln.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	host, port, err := s.advertised(ln.Addr())
	if err != nil {
		ln.Close()
		return err
	}
	s.mu.Lock()
	if s.mu.closing {
		s.mu.Unlock()
		ln.Close()
		return ErrServerClosed
	}
	s.mu.listeners[ln] = struct{}{}
	s.acceptDone.Add(1)
	s.mu.Unlock()
	defer s.acceptDone.Done()
	defer func() {
		s.mu.Lock()
		delete(s.mu.listeners, ln)
		s.mu.Unlock()
	}()
	stop := context.AfterFunc(ctx, s.closeNow)
	defer stop()
	s.log.Info("kafka: listening", "addr", ln.Addr().String(), "advertised", net.JoinHostPort(host, strconv.Itoa(int(port))))

	var backoff time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			s.mu.Lock()
			closing := s.mu.closing
			s.mu.Unlock()
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if closing || errors.Is(err, net.ErrClosed) {
				return ErrServerClosed
			}
			// Out of descriptors, say: wait and try again, as net/http does.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			s.log.Warn("kafka: accept failed; retrying", "err", err, "in", backoff)
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		c := s.newConn(nc, host, port)
		if c == nil {
			continue
		}
		go c.serve()
	}
}

// newConn registers a new connection, or refuses it.
func (s *Server) newConn(nc net.Conn, host string, port int32) *conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.closing {
		nc.Close()
		return nil
	}
	if len(s.mu.conns) >= s.o.MaxConnections {
		s.log.Warn("kafka: refusing connection: the server is at its connection limit (--max-connections)",
			"remote", nc.RemoteAddr().String(), "limit", s.o.MaxConnections)
		nc.Close()
		return nil
	}
	c := newConn(s, nc, host, port)
	s.mu.conns[c] = struct{}{}
	s.connsDone.Add(1)
	return c
}

// forget unregisters a finished connection.
func (s *Server) forget(c *conn) {
	s.mu.Lock()
	delete(s.mu.conns, c)
	s.mu.Unlock()
	s.connsDone.Done()
}

// Shutdown stops the server gracefully: it closes the listeners, stops
// reading new requests, cuts long polls short, and waits until every
// request already read is answered and every connection closed — or
// until ctx is done, when it closes the remaining connections at once and
// returns ctx.Err(). Acknowledged writes are durable as their acks said
// before Shutdown returns; close the DB after it to write the
// clean-shutdown checkpoint.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.mu.closing = true
	for ln := range s.mu.listeners {
		ln.Close()
	}
	for c := range s.mu.conns {
		c.stopReading()
	}
	s.mu.Unlock()
	s.stopPolls()
	s.acceptDone.Wait()
	s.groups.close()

	done := make(chan struct{})
	go func() {
		s.connsDone.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		s.closeNow()
		<-done
		return ctx.Err()
	}
}

// Close closes the listeners and every connection at once, without
// waiting for requests in progress. It returns once they are all closed.
func (s *Server) Close() error {
	s.closeNow()
	s.acceptDone.Wait()
	s.connsDone.Wait()
	return nil
}

func (s *Server) closeNow() {
	s.mu.Lock()
	s.mu.closing = true
	for ln := range s.mu.listeners {
		ln.Close()
	}
	for c := range s.mu.conns {
		c.nc.Close()
	}
	s.mu.Unlock()
	s.stopPolls()
	s.groups.close()
}

// advertised is the broker address Metadata reports to clients of a
// listener.
func (s *Server) advertised(addr net.Addr) (string, int32, error) {
	if s.o.Advertise != "" {
		return splitHostPort(s.o.Advertise)
	}
	host, port, err := splitHostPort(addr.String())
	if err != nil {
		return "", 0, fmt.Errorf("kafka: listener address: %w", err)
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		s.log.Warn("kafka: listening on all interfaces without an advertised address; telling clients 127.0.0.1 (set --advertise HOST:PORT)",
			"addr", addr.String())
		host = "127.0.0.1"
	}
	return host, port, nil
}

func splitHostPort(hp string) (string, int32, error) {
	host, ps, err := net.SplitHostPort(hp)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.ParseUint(ps, 10, 16)
	if err != nil || port == 0 {
		return "", 0, fmt.Errorf("bad port %q", ps)
	}
	if host == "" {
		return "", 0, errors.New("no host")
	}
	return host, int32(port), nil
}
