package kafka

// Limits: what one client, or many, can make the server spend. Each is a
// field of Options named for Kafka's broker config where Kafka has one
// (docs/kafka.md, "Limits"), counted in Stats and served at /metrics
// through Collector.
//
//	socket.request.max.bytes   a declared request size over it closes the connection
//	queued.max.request.bytes   bytes of requests being read, broker-wide: at the limit, sockets wait
//	request.timeout.ms         a request that started arriving must have arrived within it
//	connections.max.idle.ms    a connection with nothing to read or write for it is closed
//	max.connections            connections open at once; at the limit the longest-idle one makes room
//	max.connections.per.ip     the same, for one client address
//	fetch.max.bytes            the most record bytes of one fetch response
//	queued.max.response.bytes  bytes of fetch responses being built and written, broker-wide (passbook's own)

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Close reasons, the label of passbook_kafka_connections_closed_total.
const (
	closeIdle        = "idle"          // connections.max.idle.ms
	closeTooLarge    = "too_large"     // socket.request.max.bytes
	closeSlowRequest = "slow_request"  // request.timeout.ms, reading
	closeSlowReply   = "slow_response" // request.timeout.ms, writing
	closePerIP       = "per_ip_limit"  // max.connections.per.ip, refused
	closeLimit       = "limit"         // max.connections, refused
	closeEvicted     = "evicted"       // closed to make room at a connection limit
)

var closeReasons = []string{closeIdle, closeTooLarge, closeSlowRequest, closeSlowReply, closePerIP, closeLimit, closeEvicted}

// evictMinIdle is how long a connection must have been idle before it
// may be closed to make room for a new one at a connection limit.
const evictMinIdle = time.Second

// Stats are the server's counters of its limits, for /metrics.
type Stats struct {
	// Connections is how many client connections are open.
	Connections int
	// Closed counts connections closed or refused by a limit, by reason:
	// idle, too_large, slow_request, slow_response, per_ip_limit, limit,
	// evicted.
	Closed map[string]uint64
	// RequestBytesInFlight is the memory held by requests being read
	// and handled (queued.max.request.bytes counts it).
	RequestBytesInFlight int64
	// RequestBytesPooled is the memory of idle request buffers kept for
	// reuse; queued.max.request.bytes counts it too, and a request that
	// needs it takes it before waiting.
	RequestBytesPooled int64
	// RequestBytesWaits counts the times a connection stopped reading
	// because queued.max.request.bytes was reached.
	RequestBytesWaits uint64
	// ResponseBytesInFlight is the record bytes of fetch responses being
	// built and written (queued.max.response.bytes counts them).
	ResponseBytesInFlight int64
	// ResponseBytesWaits counts the times a fetch waited, or returned
	// less, because queued.max.response.bytes was reached.
	ResponseBytesWaits uint64
	// FetchesCapped counts fetches whose max_bytes or a partition's
	// max_bytes was lowered to fetch.max.bytes.
	FetchesCapped uint64
	// FetchSendfileBytes counts the record bytes of fetch responses sent
	// from the segment files with sendfile(2), without passing through
	// the server's memory (plain TCP connections on Linux).
	FetchSendfileBytes uint64
}

// Stats returns the current counters.
func (s *Server) Stats() Stats {
	inFlight, pooled := s.frames.usage()
	st := Stats{
		Closed:                make(map[string]uint64, len(closeReasons)),
		RequestBytesInFlight:  inFlight,
		RequestBytesPooled:    pooled,
		RequestBytesWaits:     s.requestBytes.waits.Load(),
		ResponseBytesInFlight: s.responseBytes.inUse(),
		ResponseBytesWaits:    s.responseBytes.waits.Load(),
		FetchesCapped:         s.fetchesCapped.Load(),
		FetchSendfileBytes:    s.fetchIO.sendfileBytes.Load(),
	}
	for _, r := range closeReasons {
		st.Closed[r] = s.closed[r].Load()
	}
	s.mu.Lock()
	st.Connections = len(s.mu.conns)
	s.mu.Unlock()
	return st
}

// limitHit counts a connection closed or refused for reason and logs it
// at warn level: the first time, then at most once per limitLogEvery
// with how many more there were meanwhile — never one line per
// connection of a flood.
func (s *Server) limitHit(reason, remote, msg string, attrs ...any) {
	s.closed[reason].Add(1)
	s.rateLog(slog.LevelWarn, reason, msg, append(attrs, "remote", remote, "reason", reason)...)
}

// rateLog logs msg at level the first time key is logged, then at most
// once per limitLogEvery with how many lines were left out meanwhile.
func (s *Server) rateLog(level slog.Level, key, msg string, attrs ...any) {
	s.limitLogMu.Lock()
	l := s.limitLogs[key]
	if l == nil {
		l = &limitLog{}
		s.limitLogs[key] = l
	}
	now := time.Now()
	if !l.last.IsZero() && now.Sub(l.last) < limitLogEvery {
		l.suppressed++
		s.limitLogMu.Unlock()
		return
	}
	suppressed := l.suppressed
	l.last, l.suppressed = now, 0
	s.limitLogMu.Unlock()
	if suppressed > 0 {
		attrs = append(attrs, "more_since_last_line", suppressed)
	}
	s.log.Log(context.Background(), level, msg, attrs...)
}

const limitLogEvery = 10 * time.Second

type limitLog struct {
	last       time.Time
	suppressed uint64
}

// byteBudget is a broker-wide count of bytes held, with a limit: acquire
// waits until the bytes fit. A single acquisition larger than the whole
// limit goes through when nothing else is held, so that nothing is
// refused for ever.
type byteBudget struct {
	limit int64
	waits atomic.Uint64
	mu    struct {
		sync.Mutex
		used    int64
		changed chan struct{} // closed at each release
	}
}

func newByteBudget(limit int64) *byteBudget {
	b := &byteBudget{limit: limit}
	b.mu.changed = make(chan struct{})
	return b
}

// acquire takes n bytes, waiting while they do not fit, until ctx is done.
func (b *byteBudget) acquire(ctx context.Context, n int64) error {
	counted := false
	for {
		b.mu.Lock()
		if b.mu.used == 0 || b.mu.used+n <= b.limit {
			b.mu.used += n
			b.mu.Unlock()
			return nil
		}
		ch := b.mu.changed
		b.mu.Unlock()
		if !counted {
			b.waits.Add(1)
			counted = true
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

// tryAcquire takes n bytes if they fit now.
func (b *byteBudget) tryAcquire(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.mu.used == 0 || b.mu.used+n <= b.limit {
		b.mu.used += n
		return true
	}
	b.waits.Add(1)
	return false
}

func (b *byteBudget) release(n int64) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	b.mu.used -= n
	close(b.mu.changed)
	b.mu.changed = make(chan struct{})
	b.mu.Unlock()
}

func (b *byteBudget) inUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.mu.used
}

// logLimits says the limits in force, once, at the first Serve.
func (s *Server) logLimits() {
	s.log.Info("kafka: limits",
		"socket.request.max.bytes", s.o.SocketRequestMaxBytes,
		"queued.max.request.bytes", s.o.QueuedMaxRequestBytes,
		"request.timeout", s.o.RequestTimeout,
		"connections.max.idle", s.o.ConnectionsMaxIdle,
		"max.connections", s.o.MaxConnections,
		"max.connections.per.ip", s.o.MaxConnectionsPerIP,
		"fetch.max.bytes", s.o.FetchMaxBytes,
		"queued.max.response.bytes", s.o.QueuedMaxResponseBytes)
}
