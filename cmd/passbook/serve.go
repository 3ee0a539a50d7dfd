package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/kafka"
	"github.com/passbook-log/passbook/offsets"
	"github.com/passbook-log/passbook/storage"
	"github.com/passbook-log/passbook/web"
	"github.com/spf13/cobra"
)

func newServeCmd(e *env) *cobra.Command {
	var (
		kafkaAddr string
		httpAddr  string
		httpOpts  web.Options
		ko        kafka.Options
		autoTopic bool
		grace     time.Duration
		maxFiles  int
		offSync   string
		sf        securityFlags
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the data directory to Kafka clients",
		Long: `Serve the data directory over the Kafka wire protocol, so that Kafka clients
and tools (franz-go, sarama, librdkafka and kcat, kafkajs, the Java client)
produce to it and consume from it unchanged. It is a cluster of one broker
(node id 0). It listens on loopback unless told otherwise; with --kafka on
all interfaces, set --advertise to the address clients should use.

Produce with acks=all returns once the records are fsync'd; acks=1 once they
are written to the operating system (they survive the server being killed).
Idempotent producers (franz-go's default) are deduplicated: a retried batch
is not written twice, also across a restart.

Consumer groups work as with Kafka (the classic protocol: the group's leader
assigns the partitions). A group's committed offsets are kept in the same
offset store as embedded consumers': the dashboard and /api/consumers (with
--http) show them while it runs, 'passbook lag' and 'passbook offsets' once it
is stopped. Group membership is kept in memory: on a restart, members join
again and resume from their committed offsets.

Transactions work as with Kafka (docs/transactions.md): transactional
producers, read_committed consumers, offsets committed in a transaction
(exactly-once consume-transform-produce). The coordinator's state is in
transactions.log in the data directory, fsync'd before each answer that
depends on it: a transaction the server was killed in the middle of ends
the same way on every partition once it restarts. A producer may ask for a
transaction.timeout.ms up to --transaction-max-timeout; a transaction open
longer than its timeout is aborted (checked every
--transaction-check-interval).

What a client can make it spend is bounded, each limit named for Kafka's
broker config: a request over --socket-request-max-bytes closes its
connection; requests being read hold at most --queued-max-request-bytes of
memory in all (then the server stops reading until some are done); a request
must arrive, and its response be read, within --request-timeout; a connection
idle for --connections-max-idle is closed; --max-connections and
--max-connections-per-ip bound connections, and at either limit the
longest-idle connection is closed to make room for a new one; a fetch response
holds at most --fetch-max-bytes of records (the first batch whole), and all
responses being written at most --queued-max-response-bytes. With --http,
/metrics counts each (passbook_kafka_*); docs/reliability.md has the table.

The HTTP API (--http) is bounded too: --http-max-connections (the connection
idle longest makes room, else 503), --http-read-header-timeout,
--http-read-timeout (a slow body is cut: 408), --http-write-timeout,
--http-idle-timeout, --http-max-header-bytes, and SSE streams:
--http-max-streams in all (503) and --http-max-streams-per-client with long
polls (429), each write within --http-stream-write-timeout. Each has a
passbook_http_* metric; docs/http-api.md has the table.

Security (docs/security.md): --tls-cert/--tls-key put TLS on both listeners
(--tls-client-ca also requires client certificates: User:CN is the
principal); --sasl requires Kafka clients to authenticate as users made with
'passbook user add'; --authorize enforces ACLs ('passbook acl add') on the
Kafka protocol and the HTTP API. The HTTP API asks for the same users'
credentials (HTTP Basic, 'passbook token create' bearer tokens, or the
dashboard's sign-in) with --sasl, --authorize or beyond loopback. Browser
safety is always on: the Host header must name this server, and another
site's page cannot change anything. A listener beyond loopback without TLS
and authentication is refused unless --insecure.

On SIGTERM or SIGINT it stops accepting connections, answers the requests it
has already read, then closes the data directory (fsync and clean-shutdown
checkpoint).`,
		Example: `  passbook serve --data ./data
  passbook serve --data ./data --kafka 0.0.0.0:9092 --advertise kafka.example.com:9092 \
      --tls-cert server.pem --tls-key server-key.pem --sasl scram-sha-512 --authorize --super-users User:admin
  kcat -b 127.0.0.1:9092 -t orders -P < orders.txt`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ko.DisableAutoCreateTopics = !autoTopic
			log := e.logger()
			sec, err := sf.apply(e.data, kafkaAddr, httpAddr, &ko, &httpOpts, log)
			if err != nil {
				return err
			}
			if err := ko.Validate(); err != nil {
				return usageError{err}
			}
			logFileLimit(log.Debug)
			timer := web.NewSyncTimer(nil) // fsync latency for /metrics
			sync, err := offsets.ParseSync(offSync)
			if err != nil {
				return usageError{fmt.Errorf("--offsets-sync: %w", err)}
			}
			db, err := passbook.Open(e.data, &passbook.Options{Logger: log, FS: timer, MaxOpenSegmentFiles: maxFiles,
				Offsets: offsets.Options{Synchronous: sync}})
			if err != nil {
				return err
			}
			ko.Logger = log
			ks, err := kafka.NewServer(db, &ko)
			if err != nil {
				db.Close()
				return err
			}
			services := []service{{
				name: "kafka", addr: kafkaAddr, serve: ks.Serve, shutdown: ks.Shutdown,
			}}
			if httpAddr != "" {
				hs, ws := httpService(db, httpAddr, httpOpts, timer, log)
				if err := ws.Registry().Register(ks.Collector()); err != nil {
					db.Close()
					return fmt.Errorf("kafka metrics: %w", err)
				}
				services = append(services, hs)
			}
			defer sec.start(log)()
			return serveAll(cmd.Context(), log, db, grace, services)
		},
	}
	f := cmd.Flags()
	f.StringVar(&kafkaAddr, "kafka", "127.0.0.1:9092", "address to serve the Kafka protocol on")
	f.StringVar(&httpAddr, "http", "", "also serve the HTTP API, /metrics and the dashboard on this address, such as 127.0.0.1:8080")
	httpFlags(f, &httpOpts)
	sf.register(f, &httpOpts)
	f.StringVar(&ko.Advertise, "advertise", "", "host:port clients are told to connect to (default: the --kafka address); the HTTP API answers to its host too")
	f.BoolVar(&autoTopic, "auto-create-topics", true, "create a topic when a client asks for metadata of a missing one and allows creation")
	f.IntVar(&ko.DefaultPartitions, "default-partitions", 1, "partitions of auto-created topics and of topics created with the default count")
	f.IntVar(&ko.SocketRequestMaxBytes, "socket-request-max-bytes", 104_857_600, "largest request accepted (Kafka's socket.request.max.bytes); a larger one closes its connection")
	f.IntVar(&ko.SocketRequestMaxBytes, "max-request-bytes", 104_857_600, "old name of --socket-request-max-bytes")
	f.MarkDeprecated("max-request-bytes", "use --socket-request-max-bytes")
	f.Int64Var(&ko.QueuedMaxRequestBytes, "queued-max-request-bytes", 100<<20, "memory for requests being read, over all connections (Kafka's queued.max.request.bytes); at the limit the server stops reading until some are done; at least --socket-request-max-bytes")
	f.DurationVar(&ko.RequestTimeout, "request-timeout", 30*time.Second, "a request must arrive, and its response be read, within this once started; a slower connection is closed")
	f.DurationVar(&ko.ConnectionsMaxIdle, "connections-max-idle", 10*time.Minute, "close a connection with no request or response for this long (Kafka's connections.max.idle.ms)")
	f.IntVar(&ko.MaxConnections, "max-connections", 10_000, "most client connections open at once (Kafka's max.connections); at the limit a new one closes the longest-idle one, if idle 1 s or more")
	f.IntVar(&ko.MaxConnectionsPerIP, "max-connections-per-ip", 1_000, "most connections open at once from one client address (Kafka's max.connections.per.ip), with the same room made")
	f.IntVar(&ko.FetchMaxBytes, "fetch-max-bytes", 57_671_680, "most record bytes in one fetch response and in each of its partitions, whatever the client asks (Kafka's fetch.max.bytes); the first batch is sent whole even if larger")
	f.Int64Var(&ko.QueuedMaxResponseBytes, "queued-max-response-bytes", 128<<20, "record bytes of fetch responses being built and written, over all connections (passbook's own); at the limit a fetch returns what it has or waits for room")
	f.DurationVar(&ko.GroupMinSessionTimeout, "group-min-session-timeout", time.Second, "shortest session timeout a consumer group member may ask for")
	f.DurationVar(&ko.GroupMaxSessionTimeout, "group-max-session-timeout", 30*time.Minute, "longest session timeout a consumer group member may ask for")
	f.DurationVar(&ko.GroupConsumerSessionTimeout, "group-consumer-session-timeout", 45*time.Second, "session timeout of the members of KIP-848 consumer groups (Kafka's group.consumer.session.timeout.ms)")
	f.DurationVar(&ko.GroupConsumerHeartbeatInterval, "group-consumer-heartbeat-interval", 5*time.Second, "heartbeat interval the broker gives KIP-848 consumer group members (Kafka's group.consumer.heartbeat.interval.ms); under the session timeout")
	f.IntVar(&ko.GroupConsumerMaxSize, "group-consumer-max-size", 1<<31-1, "most members of a KIP-848 consumer group (Kafka's group.consumer.max.size)")
	f.DurationVar(&ko.TransactionMaxTimeout, "transaction-max-timeout", 15*time.Minute, "longest transaction.timeout.ms a transactional producer may ask for (Kafka's transaction.max.timeout.ms)")
	f.DurationVar(&ko.TransactionCheckInterval, "transaction-check-interval", 10*time.Second, "how often transactions open longer than their timeout are aborted (Kafka's transaction.abort.timed.out.transaction.cleanup.interval.ms)")
	f.IntVar(&maxFiles, "max-open-segment-files", storage.DefaultMaxOpenFiles, "most segment files (log, index, time index) open at once over all partitions; the least recently used are closed and reopened when next read (passbook's own: Kafka keeps all open and needs ulimit -n above 3 per segment); -1: no limit")
	f.StringVar(&offSync, "offsets-sync", "group", "when an OffsetCommit is answered: group (fsync'd, shared with concurrent commits: it survives a power loss), full (an fsync of its own) or normal (written to the OS: it survives the server being killed, not a power loss)")
	f.DurationVar(&grace, "shutdown-timeout", 30*time.Second, "how long a shutdown waits for requests in progress")
	return cmd
}

// logger is the server's log: info and up, or everything with -v.
func (e *env) logger() *slog.Logger {
	level := slog.LevelInfo
	if e.verbose {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: level}))
}

// service is one protocol served on one listener over the shared DB: the
// Kafka server, and whatever joins it (an HTTP API).
type service struct {
	name     string
	addr     string
	serve    func(context.Context, net.Listener) error
	shutdown func(context.Context) error
}

// serveAll listens on every service's address, serves them until ctx is
// done or one fails, then shuts them all down, giving requests in
// progress up to grace to finish, and closes db last.
func serveAll(ctx context.Context, log *slog.Logger, db *passbook.DB, grace time.Duration, services []service) (err error) {
	defer func() {
		if cerr := db.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("close data directory: %w", cerr))
		} else {
			log.Info("data directory closed cleanly", "dir", db.Dir())
		}
	}()
	lns := make([]net.Listener, len(services))
	for i, s := range services {
		if lns[i], err = net.Listen("tcp", s.addr); err != nil {
			for _, ln := range lns[:i] {
				ln.Close()
			}
			return fmt.Errorf("%s: %w", s.name, err)
		}
	}
	failed := make(chan error, len(services))
	stopped := make(chan struct{}, len(services))
	for i, s := range services {
		go func() {
			// Not ctx: a signal means a graceful shutdown, below, not
			// connections closed at once.
			err := s.serve(context.Background(), lns[i])
			if !errors.Is(err, kafka.ErrServerClosed) && !errors.Is(err, http.ErrServerClosed) {
				failed <- fmt.Errorf("%s: %w", s.name, err)
			}
			stopped <- struct{}{}
		}()
	}
	select {
	case <-ctx.Done():
		log.Info("shutting down: no new connections; answering requests in progress", "timeout", grace)
	case err = <-failed:
		log.Error("shutting down after a failure", "err", err)
	}
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	for _, s := range services {
		if serr := s.shutdown(sctx); serr != nil {
			log.Warn("shutdown did not finish in time; connections closed", "service", s.name, "err", serr)
		}
	}
	for range services {
		<-stopped
	}
	return err
}
