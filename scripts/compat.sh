#!/usr/bin/env bash
# Runs every real-client script under tests/clients/ (as scripts/test.sh
# does) with PASSBOOK_COMPAT_DIR set, so that each saves its checks, then
# writes docs/kafka.md's client × feature table from them
# (scripts/compat.py). A script that fails still gives its rows; the
# exit status says whether all passed. About 10 minutes on 2 cores.
set -uo pipefail
cd "$(dirname "$0")/.."
export PASSBOOK_COMPAT_DIR
PASSBOOK_COMPAT_DIR=$(mktemp -d)
trap 'rm -rf "$PASSBOOK_COMPAT_DIR"' EXIT
rc=0
for script in tests/clients/*.sh tests/clients/*/run.sh; do
	[ -f "$script" ] || continue
	echo "== $script"
	bash "$script" || rc=1
done
python3 scripts/compat.py "$PASSBOOK_COMPAT_DIR" docs/kafka.md
echo "docs/kafka.md: the client × feature table rewritten"
exit $rc
