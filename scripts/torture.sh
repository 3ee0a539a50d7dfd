#!/usr/bin/env bash
# Torture run: trials of the embedded and Kafka workloads, one fault each
# (kill -9, power loss, a flipped byte, a failing disk), checking every
# acknowledged record after each. CI runs a 90 s version as a Go test
# (TestTorture in cmd/torture); this is the long one of docs/reliability.md.
#   scripts/torture.sh                           # 1,000 trials of each fault kind
#   scripts/torture.sh -trials 100 -seed 42      # a given seed
#   scripts/torture.sh -duration 10m -kinds kill9/kafka
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -eq 0 ]; then
  set -- -trials 1000
fi
exec go run ./cmd/torture "$@"
