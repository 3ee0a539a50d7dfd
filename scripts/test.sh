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

for script in tests/clients/*.sh tests/clients/*/run.sh; do
  [ -f "$script" ] || continue
  echo "== $script"
  bash "$script"
done
