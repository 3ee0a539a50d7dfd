#!/usr/bin/env bash
# Runs the project's checks and tests, in three tiers:
#
#   scripts/test.sh          the default, and what CI runs (.ci/run calls it):
#                            gofmt, go vet, a darwin build (the Linux-only
#                            files' fallbacks), staticcheck (STATICCHECK, pinned),
#                            go test -race ./... (TestTorture's
#                            90 s of faults included), the benchmark harness's
#                            quick run (Apache Kafka among its peers), and the
#                            real-client scripts under tests/clients: kcat,
#                            kafkajs, librdkafka (confluent-kafka-go), Java,
#                            Kafka Streams, Kafka Connect, Python, and a
#                            three-node Apache Kafka cluster. The README's
#                            test command.
#   scripts/test.sh quick    while you work (under 3 minutes on 2 cores):
#                            gofmt, go vet and go test -race -short ./...,
#                            which skips the long tests (torture, kill -9
#                            rounds, many partitions, the browser) and the
#                            client scripts.
#   scripts/test.sh long     before a release (about an hour): the default
#                            tier, then every fuzz target for FUZZTIME (1m),
#                            10,000 partitions of 10 segments each through
#                            passbook serve, the lab over Kafka with the
#                            seed's 100,000 orders (PASSBOOK_LAB_KAFKA=full),
#                            the long torture run (scripts/torture.sh,
#                            TORTURE_DURATION 20m) and the soak
#                            (scripts/soak.sh, SOAK_DURATION 10m).
#
# Every tier's go test includes two checks written as tests: the
# direction of imports (internal/lint) and, at the end of the consumer,
# storage, offsets, web and kafka tests, that no goroutine they started
# still runs (internal/leakcheck).
set -euo pipefail
cd "$(dirname "$0")/.."
tier=${1:-default}
case "$tier" in
quick | default | long) ;;
*)
  echo "usage: scripts/test.sh [quick|default|long]" >&2
  exit 2
  ;;
esac

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change:"; echo "$unformatted"; exit 1
fi

echo "== go vet"
go vet ./...
go vet -C bench ./...

if [ "$tier" != quick ]; then
  # The mapped write path, sendfile and the WAL mapping are Linux-only
  # files with fallbacks beside them: this keeps the fallbacks building.
  echo "== go build (GOOS=darwin)"
  GOOS=darwin go build ./...
  # Pinned: a later release may need a later Go. go run builds it once
  # into the module cache; it does not touch go.mod.
  staticcheck=${STATICCHECK:-honnef.co/go/tools/cmd/staticcheck@v0.8.2}
  echo "== staticcheck ($staticcheck)"
  go run "$staticcheck" ./...
  (cd bench && go run "$staticcheck" ./...)
fi

if [ "$tier" = quick ]; then
  echo "== go test -race -short"
  go test -race -short -timeout 10m ./...
  exit 0
fi

echo "== go test -race"
go test -race -timeout 20m ./...

# The side-by-side harness is its own module (the peers' clients stay out
# of passbook's go.mod); its quick run (N = 10,000, one trial, the peers
# installed here) keeps it from rotting.
echo "== go test -race (bench/)"
go test -C bench -race -timeout 10m ./...

for script in tests/clients/*.sh tests/clients/*/run.sh; do
  [ -f "$script" ] || continue
  echo "== $script"
  bash "$script"
done

if [ "$tier" = long ]; then
  fuzztime=${FUZZTIME:-1m}
  for pkg in $(go list ./...); do
    for target in $(go test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
      echo "== fuzz $pkg $target ($fuzztime)"
      go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "$pkg"
    done
  done
  echo "== 10,000 partitions x 10 segments through passbook serve"
  PASSBOOK_MANY_PARTITIONS=full go test -count=1 -timeout 30m -run '^TestServe_ManyPartitions$' ./cmd/passbook
  echo "== the lab over Kafka with the seed's 100,000 orders"
  PASSBOOK_LAB_KAFKA=full go test -count=1 -timeout 30m -run '^TestBinary_LabKafka$' ./cmd/passbook
  echo "== scripts/torture.sh -duration ${TORTURE_DURATION:-20m}"
  scripts/torture.sh -duration "${TORTURE_DURATION:-20m}"
  echo "== scripts/soak.sh -duration ${SOAK_DURATION:-10m}"
  scripts/soak.sh -duration "${SOAK_DURATION:-10m}"
fi
