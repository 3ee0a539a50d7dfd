#!/usr/bin/env bash
# librdkafka 2.11 (bundled by confluent-kafka-go v2.11.1, a cgo module of
# its own) against the real passbook binary: go vet, then every test of
# this module with -race. scripts/test.sh runs it in the default tier.
set -euo pipefail
cd "$(dirname "$0")"
echo "go vet (tests/clients/librdkafka)"
go vet ./...
if [ -z "${PASSBOOK_COMPAT_DIR:-}" ]; then
	exec go test -race -count=1 -timeout 15m ./...
fi
# For scripts/compat.sh: each top-level test's outcome, as the client
# scripts print their checks.
set -o pipefail
out=$(mktemp)
trap 'rm -f "$out"' EXIT
rc=0
go test -race -count=1 -timeout 15m -v ./... | tee "$out" || rc=$?
mkdir -p "$PASSBOOK_COMPAT_DIR"
sed -n 's/^--- PASS: \(Test[^ ]*\).*/ok   \1/p; s/^--- FAIL: \(Test[^ ]*\).*/FAIL \1/p' "$out" >"$PASSBOOK_COMPAT_DIR/librdkafka.txt"
exit $rc
