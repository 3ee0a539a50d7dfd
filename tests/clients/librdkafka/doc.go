// Package librdkafka tests passbook serve with librdkafka, the C client
// behind confluent-kafka-go, confluent-kafka-python, kcat and most
// non-JVM Kafka applications, through confluent-kafka-go and the
// librdkafka it bundles (2.11). It is its own module so that cgo and the
// bundled library stay out of passbook's go.mod; run.sh runs its tests,
// and scripts/test.sh runs run.sh.
//
// Each test starts the real passbook binary (built once per run from
// this checkout) as a process on loopback ports picked at run time.
package librdkafka
