#!/usr/bin/env bash
# librdkafka 2.11 (bundled by confluent-kafka-go v2.11.1, a cgo module of
# its own) against the real passbook binary: go vet, then every test of
# this module with -race. scripts/test.sh runs it in the default tier.
set -euo pipefail
cd "$(dirname "$0")"
echo "go vet (tests/clients/librdkafka)"
go vet ./...
go test -race -count=1 -timeout 15m ./...
