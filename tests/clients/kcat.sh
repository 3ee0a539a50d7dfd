#!/usr/bin/env bash
# kcat (librdkafka) against `passbook serve`: produce with -P, consume
# with -C, byte-for-byte comparisons, offsets, keys, acks, the four
# compression codecs, and balanced consumers in a group (-G) that commit.
# Needs kcat (Debian package kcat) and go.
. "$(dirname "$0")/lib.bash"
command -v kcat >/dev/null || { echo "kcat is not installed (apt-get install -y kcat)"; exit 1; }
build_passbook
"$work/passbook" --data "$work/data" topic create grouped --partitions 3 >/dev/null || exit 1
start_server

# 10,000 lines, with tabs, unicode and repeated text (so it compresses).
for i in $(seq 1 10000); do
	printf 'line %05d\tpassbook — a durable append-only log ✓ %s\n' "$i" "$((i * 7919 % 10007))"
done >"$work/in.txt"

kc() { kcat -b "$addr" -q "$@"; }

produce_consume() { # topic, extra producer flags…
	local topic=$1
	shift
	kc -t "$topic" -P "$@" <"$work/in.txt" &&
		kc -t "$topic" -C -o beginning -e >"$work/out-$topic.txt" &&
		cmp -s "$work/in.txt" "$work/out-$topic.txt"
}
check "produce 10,000 lines with -P, consume with -C -o beginning -e: identical" produce_consume lines

from_offset() {
	kc -t lines -C -o 4321 -e >"$work/from.txt" && tail -n +4322 "$work/in.txt" | cmp -s - "$work/from.txt"
}
check "consume with -o 4321: lines 4322 to 10000" from_offset

last_ten() {
	kc -t lines -C -o -10 -e >"$work/last.txt" && tail -n 10 "$work/in.txt" | cmp -s - "$work/last.txt"
}
check "consume with -o -10: the last ten lines" last_ten

offsets_dense() {
	kc -t lines -C -o beginning -e -f '%o\n' >"$work/offsets.txt" && seq 0 9999 | cmp -s - "$work/offsets.txt"
}
check "offsets are 0 to 9999" offsets_dense

keys() {
	seq 1 1000 | sed 's/.*/key-&:value-&/' >"$work/kv.txt" &&
		kc -t keyed -P -K: <"$work/kv.txt" &&
		kc -t keyed -C -o beginning -e -f '%k:%s\n' >"$work/kv-out.txt" &&
		cmp -s "$work/kv.txt" "$work/kv-out.txt"
}
check "keys with -K: come back with their values" keys

for acks in 0 1 all; do
	check "produce with acks=$acks" produce_consume "acks-$acks" -X "acks=$acks"
done

log_bytes() { du -b "$work/data/topics/$1/0/"*.log | awk '{s += $1} END {print s}'; }
# librdkafka 2.0.2 enables lz4 only when the broker serves FindCoordinator.
lz4_enabled() { kcat -b "$addr" -L -d feature 2>&1 | grep -q "Enabling feature LZ4"; }
check "librdkafka enables lz4 (the broker serves FindCoordinator)" lz4_enabled
for codec in gzip snappy lz4 zstd; do
	compressed() {
		produce_consume "z-$codec" -z "$codec" -X linger.ms=20 &&
			[ "$(log_bytes "z-$codec")" -lt $(($(log_bytes lines) / 2)) ]
	}
	check "-z $codec: identical, and stored compressed" compressed
done

# Balanced consumers: two kcat members of group kc-group share the three
# partitions of "grouped", consume 3,000 records between them, each once,
# and commit; a third run of the group reads only what came after.
member() { # name; sets member_pid
	kcat -b "$addr" -G kc-group -X auto.offset.reset=earliest -X auto.commit.interval.ms=200 \
		-f '%p %o %s\n' grouped >"$work/member-$1.out" 2>"$work/member-$1.err" &
	member_pid=$!
}
# last_assigned NAME prints the partitions of the member's last assignment.
last_assigned() {
	grep 'rebalanced' "$work/member-$1.err" | tail -n 1 | grep 'assigned:' | grep -o 'grouped \[[0-9]*\]' | tr -dc '0-9\n'
}
balanced() {
	local a b i out=("$work/member-a.out" "$work/member-b.out")
	member a
	a=$member_pid
	member b
	b=$member_pid
	for i in $(seq 1 150); do
		[ "$( (last_assigned a; last_assigned b) | sort -u | wc -l)" -eq 3 ] &&
			[ "$(last_assigned a | wc -l)" -ge 1 ] && [ "$(last_assigned b | wc -l)" -ge 1 ] && break
		sleep 0.2
	done
	echo "     member a: partitions $(last_assigned a | paste -sd,); member b: $(last_assigned b | paste -sd,)"
	seq 1 3000 | sed 's/.*/key-&:value-&/' | kc -t grouped -P -K: || return 1
	for i in $(seq 1 150); do
		[ "$(cat "${out[@]}" | wc -l)" -ge 3000 ] && break
		sleep 0.2
	done
	kill -TERM "$a" "$b" # they leave the group, committing what they consumed
	wait "$a" "$b"
	echo "     member a consumed $(wc -l <"${out[0]}"), member b $(wc -l <"${out[1]}"); $(cut -d' ' -f3 "${out[@]}" | sort -u | wc -l) distinct"
	# Each record once, and each member only from its own partitions.
	[ "$(cat "${out[@]}" | wc -l)" -eq 3000 ] &&
		[ "$(cut -d' ' -f3 "${out[@]}" | sort -u | wc -l)" -eq 3000 ] &&
		[ -z "$(cut -d' ' -f1 "${out[0]}" | sort -u | grep -Fx "$(last_assigned b)")" ]
}
check "two balanced consumers (-G) split 3 partitions and consume 3,000 records once" balanced
resumed() {
	seq 3001 3010 | sed 's/.*/key-&:value-&/' | kc -t grouped -P -K: &&
		kcat -b "$addr" -q -G kc-group -X auto.offset.reset=earliest -e -f '%s\n' grouped >"$work/resumed.out" 2>/dev/null &&
		[ "$(sort "$work/resumed.out" | paste -sd,)" = "$(seq 3001 3010 | sed 's/^/value-/' | sort | paste -sd,)" ]
}
check "the group resumes from its commits: a new member reads only the 10 new records" resumed

# Once the server is stopped, the CLI shows the group's commits.
after_stop() {
	group_lag() {
		"$work/passbook" --data "$work/data" lag --consumer kc-group >"$work/lag.txt" &&
			[ "$(awk '$1 == "kc-group" && $2 == "grouped" && $6 == 0 {n++} END {print n}' "$work/lag.txt")" = 3 ]
	}
	check "passbook lag shows group kc-group, 0 behind on its 3 partitions" group_lag
}

check "metadata (-L) lists the topics" sh -c "kcat -b '$addr' -L | grep -q 'topic \"lines\" with 1 partitions'"

finish kcat
