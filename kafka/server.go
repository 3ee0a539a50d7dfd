package kafka

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/acl"
	"github.com/passbook-log/passbook/auth"
	"github.com/passbook-log/passbook/internal/thousands"
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
	// SocketRequestMaxBytes is the largest request frame accepted
	// (Kafka's socket.request.max.bytes): a frame declaring more closes
	// its connection before any of it is read. Default 100 MiB, Kafka's.
	SocketRequestMaxBytes int
	// QueuedMaxRequestBytes bounds the memory of requests being read and
	// handled, over all connections (Kafka's queued.max.request.bytes):
	// a request's memory grows as its bytes arrive, never to its
	// declared size up front, and once the bound is reached connections
	// stop reading until requests in hand are done. Default 100 MiB (Kafka:
	// unbounded), no less than SocketRequestMaxBytes.
	QueuedMaxRequestBytes int64
	// RequestTimeout is how long a request may take to arrive once its
	// first byte has, and a response to be written (Kafka's clients give
	// up after their request.timeout.ms, 30 s by default): a slower
	// connection is closed. Default 30 s.
	RequestTimeout time.Duration
	// ConnectionsMaxIdle closes a connection that has had no request to
	// read and no response to write for that long (Kafka's
	// connections.max.idle.ms). Default 10 minutes, Kafka's.
	ConnectionsMaxIdle time.Duration
	// MaxConnections is how many client connections may be open at once
	// (Kafka's max.connections). At the limit a new connection closes the
	// one idle longest, if one has been idle a second or more, and is
	// refused otherwise. Default 10,000.
	MaxConnections int
	// MaxConnectionsPerIP is how many connections one client address may
	// have open (Kafka's max.connections.per.ip), with the same room made
	// by closing that address's longest-idle connection. Default 1,000
	// (Kafka: unbounded).
	MaxConnectionsPerIP int
	// MaxInFlight is how many requests one connection may have read and
	// not yet answered before the server stops reading from it. Default 64.
	MaxInFlight int
	// FetchMaxBytes bounds the record bytes of one fetch response and of
	// each of its partitions, whatever the client asks (Kafka's broker
	// fetch.max.bytes); the first batch found is returned whole even if
	// larger, so that a consumer always makes progress. Default 55 MiB,
	// Kafka's.
	FetchMaxBytes int
	// QueuedMaxResponseBytes bounds the record bytes of fetch responses
	// being built and written, over all connections (passbook's own;
	// Kafka has none): at the limit a fetch returns what it has, or
	// waits for room if it has nothing yet. Default 128 MiB.
	QueuedMaxResponseBytes int64
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
	// GroupConsumerSessionTimeout, GroupConsumerHeartbeatInterval and
	// GroupConsumerMaxSize are Kafka's group.consumer.session.timeout.ms,
	// group.consumer.heartbeat.interval.ms and group.consumer.max.size for
	// groups of the KIP-848 protocol, where the broker sets them for every
	// member (group848.go). Defaults 45 s, 5 s and unbounded (2^31−1), Kafka's;
	// the interval must be under the session timeout.
	GroupConsumerSessionTimeout    time.Duration
	GroupConsumerHeartbeatInterval time.Duration
	GroupConsumerMaxSize           int
	// ProducerStateBytes is how much of a partition's tail is read, at
	// its first idempotent produce after the server starts, to rebuild
	// the last batches of each producer, so that a retry across a restart
	// is still recognized. Default 16 MiB. See docs/kafka.md.
	ProducerStateBytes int64
	// TransactionMaxTimeout is the longest transaction.timeout.ms a
	// transactional producer may ask for (Kafka's
	// transaction.max.timeout.ms): InitProducerID refuses more with
	// INVALID_TRANSACTION_TIMEOUT. Default 15 minutes, Kafka's.
	TransactionMaxTimeout time.Duration
	// TransactionCheckInterval is how often transactions open longer
	// than their timeout are aborted (Kafka's
	// transaction.abort.timed.out.transaction.cleanup.interval.ms).
	// Default 10 s, Kafka's.
	TransactionCheckInterval time.Duration
	// Logger receives the server's log lines. Default: discard.
	Logger *slog.Logger

	// Security (tls.go, sasl.go, authorize.go; docs/kafka.md, "Security").

	// TLS, if set, makes every connection TLS: the handshake must finish
	// within RequestTimeout. When the config requires and verifies client
	// certificates, a connection's principal is its certificate's
	// "User:CN" (auth.PrincipalOf), as Kafka's default
	// ssl.principal.mapping.rules make it. Default nil: plaintext.
	TLS *tls.Config
	// SASLMechanisms, if set, makes every connection authenticate with
	// one of them (auth.PLAIN, auth.SCRAMSHA256, auth.SCRAMSHA512)
	// before any request but ApiVersions, SaslHandshake and
	// SaslAuthenticate, as on a Kafka SASL_PLAINTEXT or SASL_SSL listener
	// (sasl.enabled.mechanisms). Default none: no SASL.
	SASLMechanisms []string
	// Users holds the credentials SASL checks, and is what
	// DescribeUserScramCredentials and AlterUserScramCredentials read
	// and change. Required with SASLMechanisms.
	Users *auth.Users
	// Authorizer, if set, decides every request with Kafka's ACL rules.
	// Default nil: everything is allowed.
	Authorizer *acl.Authorizer
	// ConnectionsMaxReauth is the lifetime of a SASL session (Kafka's
	// connections.max.reauth.ms): a client re-authenticates before it
	// ends (KIP-368), and a connection whose session has ended is closed
	// at its next request. Default 0: sessions never end.
	ConnectionsMaxReauth time.Duration
	// Insecure allows SASL PLAIN, which sends passwords as they are,
	// without TLS.
	Insecure bool
}

const (
	defaultSocketRequestMaxBytes  = 100 << 20 // Kafka's
	defaultQueuedMaxRequestBytes  = 100 << 20
	defaultRequestTimeout         = 30 * time.Second
	defaultConnectionsMaxIdle     = 10 * time.Minute // Kafka's
	defaultMaxConnections         = 10_000
	defaultMaxConnectionsPerIP    = 1_000
	defaultMaxInFlight            = 64
	defaultFetchMaxBytes          = 57_671_680 // 55 MiB, Kafka's
	defaultQueuedMaxResponseBytes = 128 << 20
	minFetchMaxBytes              = 1024 // Kafka's lower bound
)

// Validate reports what is wrong with o, if anything.
func (o *Options) Validate() error {
	var errs []error
	if o.DefaultPartitions < 0 || o.DefaultPartitions > passbook.MaxPartitions {
		errs = append(errs, fmt.Errorf("default partitions %d not in [1, %s]", o.DefaultPartitions, thousands.Int(passbook.MaxPartitions)))
	}
	if o.SocketRequestMaxBytes < 0 {
		errs = append(errs, fmt.Errorf("socket.request.max.bytes %d is negative", o.SocketRequestMaxBytes))
	}
	if o.QueuedMaxRequestBytes < 0 {
		errs = append(errs, fmt.Errorf("queued.max.request.bytes %d is negative", o.QueuedMaxRequestBytes))
	} else if o.QueuedMaxRequestBytes > 0 {
		req := int64(o.SocketRequestMaxBytes)
		if req == 0 {
			req = defaultSocketRequestMaxBytes
		}
		if o.QueuedMaxRequestBytes < req {
			errs = append(errs, fmt.Errorf("queued.max.request.bytes %s is under socket.request.max.bytes %s: the largest request could never be read", thousands.Int(o.QueuedMaxRequestBytes), thousands.Int(req)))
		}
	}
	if o.RequestTimeout < 0 {
		errs = append(errs, fmt.Errorf("request timeout %v is negative", o.RequestTimeout))
	}
	if o.ConnectionsMaxIdle < 0 {
		errs = append(errs, fmt.Errorf("connections.max.idle %v is negative", o.ConnectionsMaxIdle))
	}
	if o.MaxConnections < 0 {
		errs = append(errs, fmt.Errorf("max.connections %d is negative", o.MaxConnections))
	}
	if o.MaxConnectionsPerIP < 0 {
		errs = append(errs, fmt.Errorf("max.connections.per.ip %d is negative", o.MaxConnectionsPerIP))
	}
	if o.FetchMaxBytes < 0 || (o.FetchMaxBytes > 0 && o.FetchMaxBytes < minFetchMaxBytes) {
		errs = append(errs, fmt.Errorf("fetch.max.bytes %s is under %s", thousands.Int(o.FetchMaxBytes), thousands.Int(minFetchMaxBytes)))
	}
	if o.QueuedMaxResponseBytes < 0 {
		errs = append(errs, fmt.Errorf("queued.max.response.bytes %d is negative", o.QueuedMaxResponseBytes))
	}
	if o.MaxInFlight < 0 {
		errs = append(errs, fmt.Errorf("max in flight %d is negative", o.MaxInFlight))
	}
	if o.GroupConsumerSessionTimeout < 0 || o.GroupConsumerHeartbeatInterval < 0 || o.GroupConsumerMaxSize < 0 {
		errs = append(errs, fmt.Errorf("consumer group session timeout %v, heartbeat interval %v, max size %d: negative",
			o.GroupConsumerSessionTimeout, o.GroupConsumerHeartbeatInterval, o.GroupConsumerMaxSize))
	} else if s, h := cmp.Or(o.GroupConsumerSessionTimeout, defaultConsumerSessionTimeout), cmp.Or(o.GroupConsumerHeartbeatInterval, defaultConsumerHeartbeatInterval); h >= s {
		errs = append(errs, fmt.Errorf("consumer group heartbeat interval %v is not under the session timeout %v", h, s))
	}
	if o.GroupMinSessionTimeout < 0 || o.GroupMaxSessionTimeout < 0 {
		errs = append(errs, fmt.Errorf("group session timeout bounds %v, %v: negative", o.GroupMinSessionTimeout, o.GroupMaxSessionTimeout))
	} else if o.GroupMaxSessionTimeout > 0 && o.GroupMinSessionTimeout > o.GroupMaxSessionTimeout {
		errs = append(errs, fmt.Errorf("group min session timeout %v is over the max %v", o.GroupMinSessionTimeout, o.GroupMaxSessionTimeout))
	}
	if o.ProducerStateBytes < 0 {
		errs = append(errs, fmt.Errorf("producer state bytes %d is negative", o.ProducerStateBytes))
	}
	if o.TransactionMaxTimeout < 0 || o.TransactionMaxTimeout > 0 && o.TransactionMaxTimeout < time.Millisecond {
		errs = append(errs, fmt.Errorf("transaction.max.timeout %v is under 1ms", o.TransactionMaxTimeout))
	}
	if o.TransactionCheckInterval < 0 {
		errs = append(errs, fmt.Errorf("transaction check interval %v is negative", o.TransactionCheckInterval))
	}
	errs = append(errs, o.validateSecurity()...)
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
	if c.SocketRequestMaxBytes == 0 {
		c.SocketRequestMaxBytes = defaultSocketRequestMaxBytes
	}
	if c.QueuedMaxRequestBytes == 0 {
		c.QueuedMaxRequestBytes = max(defaultQueuedMaxRequestBytes, int64(c.SocketRequestMaxBytes))
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = defaultRequestTimeout
	}
	if c.ConnectionsMaxIdle == 0 {
		c.ConnectionsMaxIdle = defaultConnectionsMaxIdle
	}
	if c.MaxConnections == 0 {
		c.MaxConnections = defaultMaxConnections
	}
	if c.MaxConnectionsPerIP == 0 {
		c.MaxConnectionsPerIP = defaultMaxConnectionsPerIP
	}
	if c.FetchMaxBytes == 0 {
		c.FetchMaxBytes = defaultFetchMaxBytes
	}
	if c.QueuedMaxResponseBytes == 0 {
		c.QueuedMaxResponseBytes = defaultQueuedMaxResponseBytes
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
	if c.TransactionMaxTimeout == 0 {
		c.TransactionMaxTimeout = defaultTransactionMaxTimeout
	}
	if c.TransactionCheckInterval == 0 {
		c.TransactionCheckInterval = defaultTransactionCheck
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	c.SASLMechanisms = normalizeMechanisms(c.SASLMechanisms)
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
	txns      *txnCoordinator

	// polls is canceled by Shutdown and Close: long polls return early.
	polls      context.Context
	stopPolls  context.CancelFunc
	connsDone  sync.WaitGroup
	acceptDone sync.WaitGroup

	// The limits' budgets and counters (limits.go).
	requestBytes  *byteBudget
	frames        *framePool // request buffers, charged to requestBytes (framepool.go)
	responseBytes *byteBudget
	fetchesCapped atomic.Uint64
	fetchIO       fetchIO                   // how fetches send their records (fetchwrite.go)
	closed        map[string]*atomic.Uint64 // by close reason; fixed at NewServer
	limitLogMu    sync.Mutex
	limitLogs     map[string]*limitLog

	sec securityStats // authentications, sessions, denials (sasl.go)

	mu struct {
		sync.Mutex
		listeners map[net.Listener]struct{}
		conns     map[*conn]struct{}
		perIP     map[string]int // open connections by client address
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
	s.groups.consumer.session = cmp.Or(o.GroupConsumerSessionTimeout, defaultConsumerSessionTimeout)
	s.groups.consumer.heartbeat = cmp.Or(o.GroupConsumerHeartbeatInterval, defaultConsumerHeartbeatInterval)
	s.groups.consumer.maxSize = cmp.Or(o.GroupConsumerMaxSize, defaultConsumerMaxSize)
	s.producers = newProducerStates(o.ProducerStateBytes, o.Logger)
	txns, err := newTxnCoordinator(db, s.producers, &o)
	if err != nil {
		return nil, err
	}
	s.txns = txns
	s.polls, s.stopPolls = context.WithCancel(context.Background())
	s.mu.listeners = map[net.Listener]struct{}{}
	s.mu.conns = map[*conn]struct{}{}
	s.mu.perIP = map[string]int{}
	s.requestBytes = newByteBudget(o.QueuedMaxRequestBytes)
	s.frames = newFramePool(s.requestBytes)
	s.responseBytes = newByteBudget(o.QueuedMaxResponseBytes)
	s.closed = make(map[string]*atomic.Uint64, len(closeReasons))
	for _, r := range closeReasons {
		s.closed[r] = new(atomic.Uint64)
	}
	s.limitLogs = map[string]*limitLog{}
	s.logLimits()
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
		if s.o.TLS != nil {
			// No I/O yet: the handshake runs on the connection's own
			// goroutine (tls.go), once it is counted against the limits.
			nc = tls.Server(nc, s.o.TLS)
		}
		c := s.newConn(nc, host, port)
		if c == nil {
			continue
		}
		go c.serve()
	}
}

// newConn registers a new connection, or refuses it. At a connection
// limit (max.connections, or max.connections.per.ip for its address) the
// connection idle longest, if idle for evictMinIdle or more, is closed to
// make room: a flood of idle connections cannot lock out a client that
// has work to do, such as an operator's.
func (s *Server) newConn(nc net.Conn, host string, port int32) *conn {
	remote := nc.RemoteAddr().String()
	ip := hostOf(remote)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.closing {
		nc.Close()
		return nil
	}
	if s.mu.perIP[ip] >= s.o.MaxConnectionsPerIP && !s.evictLocked(ip) {
		s.limitHit(closePerIP, remote, "kafka: refusing connection: its address is at its connection limit (max.connections.per.ip, --max-connections-per-ip)",
			"limit", s.o.MaxConnectionsPerIP)
		nc.Close()
		return nil
	}
	if len(s.mu.conns) >= s.o.MaxConnections && !s.evictLocked("") {
		s.limitHit(closeLimit, remote, "kafka: refusing connection: the server is at its connection limit (max.connections, --max-connections)",
			"limit", s.o.MaxConnections)
		nc.Close()
		return nil
	}
	c := newConn(s, nc, host, port)
	s.mu.conns[c] = struct{}{}
	s.mu.perIP[ip]++
	s.connsDone.Add(1)
	return c
}

// evictLocked closes the connection idle longest (of address ip, or of
// any address if ip is ""), if one has been idle evictMinIdle or more,
// and reports whether it did. The connection is unregistered at once, so
// that its place is free for the caller.
func (s *Server) evictLocked(ip string) bool {
	var victim *conn
	var since int64
	now := time.Now().UnixNano()
	for c := range s.mu.conns {
		if ip != "" && c.ip != ip {
			continue
		}
		idle, ok := c.idleSince()
		if !ok || now-idle < int64(evictMinIdle) {
			continue
		}
		if victim == nil || idle < since {
			victim, since = c, idle
		}
	}
	if victim == nil {
		return false
	}
	s.forgetLocked(victim)
	s.limitHit(closeEvicted, victim.remote, "kafka: closing the longest-idle connection to make room at a connection limit",
		"idle", time.Duration(now-since).Round(time.Millisecond))
	victim.nc.Close()
	return true
}

// forget unregisters a finished connection.
func (s *Server) forget(c *conn) {
	s.mu.Lock()
	s.forgetLocked(c)
	s.mu.Unlock()
	s.connsDone.Done()
}

func (s *Server) forgetLocked(c *conn) {
	if _, ok := s.mu.conns[c]; !ok {
		return // evicted already
	}
	delete(s.mu.conns, c)
	if s.mu.perIP[c.ip]--; s.mu.perIP[c.ip] <= 0 {
		delete(s.mu.perIP, c.ip)
	}
}

// hostOf is the address part of a host:port.
func hostOf(remote string) string {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		return remote
	}
	return host
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
		s.txns.close()
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
	s.txns.close()
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
