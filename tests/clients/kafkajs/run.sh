#!/usr/bin/env bash
# kafkajs against `passbook serve`: produce 1,000 records, consume them with
# consumer groups, and the admin calls. Needs node and npm (installs kafkajs from the lockfile).
dir=$(cd "$(dirname "$0")" && pwd)
. "$dir/../lib.bash"
command -v node >/dev/null || { echo "node is not installed"; exit 1; }
if [ ! -d "$dir/node_modules/kafkajs" ]; then
	(cd "$dir" && npm ci --no-audit --no-fund --silent) || { echo "npm ci failed"; exit 1; }
fi
start_server
node "$dir/test.js" "$addr" | tee "$work/node.out"
passed=$(grep -c '^ok' "$work/node.out")
failed=$(grep -c '^FAIL' "$work/node.out")
grep -q '^node: ' "$work/node.out" || { echo "FAIL the node script did not finish"; failed=$((failed + 1)); }
finish kafkajs
