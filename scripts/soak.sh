#!/usr/bin/env bash
# Soak test (not run by CI): 10 minutes of 8 producers (franz-go, acks=all)
# and a consumer group of 8 against `passbook serve`, at half the rate the
# server sustains (measured first, for 15 s). Every 10 s it prints the
# server's RSS, goroutines (from /metrics of serve --http), open files
# (/proc/PID/fd) and produce and end-to-end latency percentiles; at the
# end it checks that memory, goroutines and open files stayed flat.
#   scripts/soak.sh                      # 10 minutes
#   scripts/soak.sh -duration 1h -rate 20000
set -euo pipefail
cd "$(dirname "$0")/.."
exec go run ./cmd/torture -soak "$@"
