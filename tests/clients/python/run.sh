#!/usr/bin/env bash
# Python's two Kafka clients against `passbook serve`: confluent-kafka
# (the librdkafka its wheel bundles) and kafka-python (pure Python), from
# PyPI at the versions in requirements.txt, in a virtual environment kept
# under ~/.cache/passbook (made anew when requirements.txt changes).
# Produce with every codec, consumer groups (classic and, with
# confluent-kafka, KIP-848) with commits, a transactional producer with
# read_committed readers, and the admin calls: configs described and
# altered, partitions created, records deleted (clients.py). If PyPI cannot be reached the script says so and
# exits 0 as skipped.
dir=$(cd "$(dirname "$0")" && pwd)
. "$dir/../lib.bash"
command -v python3 >/dev/null || { echo "python3 is not installed"; exit 1; }
sum=$(sha256sum "$dir/requirements.txt" | cut -c1-12)
venv=${XDG_CACHE_HOME:-$HOME/.cache}/passbook/python-$sum
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import confluent_kafka, kafka' 2>/dev/null; then
	rm -rf "$venv"
	python3 -m venv "$venv" || { echo "python3 -m venv failed"; exit 1; }
	if ! "$venv/bin/pip" install -q -r "$dir/requirements.txt" 2>"$work/pip.log"; then
		if grep -qiE 'connection|resolve|network|timed out|No matching distribution' "$work/pip.log"; then
			echo "skipped: PyPI could not be reached to install requirements.txt:"
			tail -n 3 "$work/pip.log"
			rm -rf "$venv"
			exit 0
		fi
		cat "$work/pip.log"
		rm -rf "$venv"
		exit 1
	fi
fi
start_server
"$venv/bin/python" "$dir/clients.py" "$addr" | tee "$work/py.out"
passed=$(grep -c '^ok' "$work/py.out")
failed=$(grep -c '^FAIL' "$work/py.out")
grep -q '^python: ' "$work/py.out" || { echo "FAIL clients.py did not finish"; failed=$((failed + 1)); }
finish python
