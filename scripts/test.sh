#!/usr/bin/env bash
# Runs every check and test of the project: formatting, vet, the Go tests
# with the race detector, and the real-client scripts under tests/clients.
# This is the README's test command; .ci/run calls it after installing
# what it needs.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change:"; echo "$unformatted"; exit 1
fi

echo "== go vet"
go vet ./...

echo "== go test -race"
go test -race -timeout 20m ./...

# The side-by-side harness is its own module (the peers' clients stay out
# of passbook's go.mod); its quick run (N = 10,000, one trial, the peers
# installed here) keeps it from rotting.
echo "== go test -race (bench/)"
go vet -C bench ./...
go test -C bench -race -timeout 10m ./...

for script in tests/clients/*.sh tests/clients/*/run.sh; do
  [ -f "$script" ] || continue
  echo "== $script"
  bash "$script"
done
