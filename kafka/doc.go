// Package kafka serves the Kafka wire protocol on top of a passbook DB,
// so that existing Kafka clients (franz-go, sarama, librdkafka/kcat,
// kafkajs, the Java client) produce to and consume from passbook
// unchanged: a cluster of one broker, NodeID, that leads every partition.
//
//	db, _ := passbook.Open(dir, nil)
//	srv, _ := kafka.NewServer(db, nil)
//	ln, _ := net.Listen("tcp", "127.0.0.1:9092")
//	go srv.Serve(ctx, ln)
//	…
//	srv.Shutdown(ctx) // answer what was read, then stop
//	db.Close()        // fsync, clean-shutdown checkpoint
//
// # Files
//
//	server.go          Options, Server: listeners, connection limits, Shutdown
//	conn.go            one connection: framing, request headers, in-order responses
//	limits.go          the limits' budgets, counters and log lines (Stats)
//	metrics.go         Collector: the limits at /metrics
//	fetchwrite.go      a fetch response written without copying its records
//	registry.go        the handler table that ApiVersions is built from
//	errors.go          sentinel errors; engine errors → Kafka error codes
//	configs.go         Kafka topic config names ↔ passbook.TopicConfig
//	groups.go          the group coordinator: groups, members, parked requests
//	group.go           a group's state machine: joins, rebalances, timeouts
//	producers.go       idempotent producers' state per partition
//	tls.go             the TLS handshake of a connection, its principal
//	sasl.go            SASL: the state of a connection, raw v0 tokens, sessions
//	authorize.go       the ACL checks the handlers make, authorized operations
//	00_produce.go      one file per API key, each opening with the versions
//	01_fetch.go        it serves and what it does not do
//	02_list_offsets.go
//	03_metadata.go
//	08_offset_commit.go
//	09_offset_fetch.go
//	10_find_coordinator.go
//	11_join_group.go
//	12_heartbeat.go
//	13_leave_group.go
//	14_sync_group.go
//	15_describe_groups.go
//	16_list_groups.go
//	17_sasl_handshake.go
//	18_api_versions.go
//	19_create_topics.go
//	20_delete_topics.go
//	22_init_producer_id.go
//	29_describe_acls.go
//	30_create_acls.go
//	31_delete_acls.go
//	32_describe_configs.go
//	36_sasl_authenticate.go
//	42_delete_groups.go
//	50_describe_user_scram_credentials.go
//	51_alter_user_scram_credentials.go
//
// Adding an API is adding a file: its init function registers a handler
// for a key and a version range, and ApiVersions advertises it.
//
// # Requests
//
// Every request and response is a kmsg struct, encoded and decoded by
// kmsg; error codes come from kerr. A connection reads and handles its
// requests in order on one goroutine (so appends land in the order they
// were sent) and writes the responses in the same order on another; a
// handler may leave part of its work — waiting for an fsync, a long poll
// — to run on the writer, so that it holds back only the responses behind
// it. A request that does not decode, an unknown API key, an unsupported
// version (other than ApiVersions, which answers with the supported
// ranges) or a frame over Options.SocketRequestMaxBytes closes that connection
// and nothing else.
//
// # Durability
//
// Produce with acks=−1 returns once the batch is fsync'd — the fsync is
// shared by every append made meanwhile, on any connection (group
// commit) — and acks=1 once it is as durable as the topic's durability
// says (by default: written to the OS, so it survives the server being
// killed). Produced batches are validated completely before anything is
// written, then stored byte for byte as received, and Fetch serves those
// same bytes.
//
// # Consumer groups
//
// The classic group protocol: the broker coordinates every group, the
// group's leader computes the assignment and the broker relays it.
// Membership lives in memory — a server restart makes members join again —
// and committed offsets in the DB's offset store, under the group id as
// the consumer name, shared with embedded consumers and the CLI.
//
// # Idempotent producers
//
// InitProducerID hands out producer ids from a durable sequence; the last
// five batches of each producer on each partition are remembered, so that
// a retried batch gets its original offset back instead of being written
// again. The state is rebuilt from the tail of the log after a restart.
//
// # Security
//
// Options.TLS makes every connection TLS, with the client certificate's
// "User:CN" as the principal when the config requires one;
// Options.SASLMechanisms requires SASL (PLAIN, SCRAM-SHA-256,
// SCRAM-SHA-512, against Options.Users) before any other request, with
// re-authentication when Options.ConnectionsMaxReauth bounds a session;
// Options.Authorizer makes every handler check Kafka 4's ACLs, a denial
// being an error code in the response. CreateAcls, DescribeAcls and
// DeleteAcls change the Authorizer's store, the SCRAM credential APIs
// the users.
//
// docs/kafka.md has the versions each client negotiates, the rules in
// full, and the differences from Kafka.
package kafka
