#!/usr/bin/env bash
# passbook against a real Apache Kafka: a cluster of three KRaft nodes
# (tests/kafka/cluster.sh, from Kafka's own jars on Maven Central), then
#   - passbook mirror of a data directory (plain, several partitions,
#     compacted with gaps) to the cluster with --groups, killed with
#     SIGKILL part-way and started again: every record once, in order, at
#     the same offsets where the summary says identical, and every
#     consumer's lag on the cluster what it was in the directory;
#   - the reverse, the cluster's topics and groups into a new directory;
#   - the CLI's --brokers commands against the cluster.
# If the jars cannot be had (no Maven, no network, refused), it says what
# was refused and exits 0 as skipped.
. "$(dirname "$0")/../lib.bash"
. "$root/tests/kafka/cluster.sh"
trap 'kafka_stop; cleanup' EXIT

if ! kafka_jars; then
	echo "apache-kafka: skipped (the jars of Apache Kafka $KAFKA_VERSION could not be had; see above)"
	exit 0
fi
build_passbook
pb() { "$work/passbook" "$@"; }
data=$work/data
kafka_start 3 || exit 1
B=$KAFKA_BOOTSTRAP

# The source: plain (dense, 1 partition), multi (3 partitions, keyed),
# keys (compacted in tiny segments: gaps), and consumers at various places.
pb --data "$data" topic create plain >/dev/null &&
	pb --data "$data" topic create multi --partitions 3 --retention 72h >/dev/null &&
	pb --data "$data" topic create keys --cleanup-policy compact --internal-segment-bytes 4096 >/dev/null || exit 1
seq 1 200000 | sed 's/.*/record &: some bytes of a value/' >"$work/plain.txt"
pb --data "$data" produce plain <"$work/plain.txt" 2>/dev/null || exit 1
seq 1 30000 | awk '{print "k" ($1 % 97) ":v" $1}' | pb --data "$data" produce multi --key-sep : 2>/dev/null || exit 1
for round in $(seq 1 20); do # one batch, and so one segment, a round
	seq 1 150 | awk -v r="$round" '{print "key" ($1 % 50) ":version " r "." $1}' | pb --data "$data" produce keys --key-sep : 2>/dev/null || exit 1
done
pb --data "$data" topic compact keys >/dev/null || exit 1
pb --data "$data" consume plain --consumer early --max 1234 >/dev/null 2>&1
pb --data "$data" consume plain --consumer done >/dev/null 2>&1
pb --data "$data" consume multi --consumer half --max 15000 >/dev/null 2>&1
pb --data "$data" consume keys --consumer cleaned --max 7 >/dev/null 2>&1
# Each consumer's lag on the topics whose offsets stay the same (on keys,
# a compacted topic, lag counts offsets, and the target's are denser).
lag_rows() {
	python3 -c 'import json,sys; [print(r["consumer"], r["topic"], r["partition"], r["lag"]) for r in json.load(sys.stdin) if r["topic"] != "keys"]' | sort
}
json_sum() { # field: the sum of a field over a JSON list of rows
	python3 -c 'import json,sys; print(sum(r[sys.argv[1]] for r in json.load(sys.stdin)))' "$1"
}
pb --data "$data" lag --json | lag_rows >"$work/lag-source.txt"

mirror=(--data "$data" mirror --to "$B" --groups --replication-factor 3)
plain_head() { # plain's head on the cluster (0 before the topic exists)
	"$work/passbook" topic describe plain --brokers "$B" --json 2>/dev/null |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["partitions"][0]["head"])' 2>/dev/null || echo 0
}
kill_round() { # kill -9 the mirror once plain's head on the cluster passes $1
	"$work/passbook" "${mirror[@]}" >"$work/mirror-killed.out" 2>&1 &
	local pid=$! head=0
	while kill -0 "$pid" 2>/dev/null; do
		head=$(plain_head)
		[ "$head" -gt "$1" ] && break
		sleep 0.05
	done
	kill -KILL "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	echo "     killed with plain's head at $head on the cluster"
}
check "mirror killed with SIGKILL part-way" kill_round 0
check "mirror killed with SIGKILL again, later" kill_round 100000
mirrored() {
	local began=$SECONDS
	pb "${mirror[@]}" >"$work/mirror.out" 2>"$work/mirror.err" || { cat "$work/mirror.err"; return 1; }
	cat "$work/mirror.out"
	grep -q '^plain .* identical' "$work/mirror.out" && grep -q '^multi .* identical' "$work/mirror.out" && grep -q '^keys .* mapped' "$work/mirror.out"
}
check "mirror run to the end: plain and multi identical, keys mapped" mirrored

same_records() { # topic: every record's value, in offset order, partition by partition
	local topic=$1 p n
	n=$(pb --data "$data" topic describe "$topic" --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["partitions"]))')
	for p in $(seq 0 $((n - 1))); do
		pb --data "$data" consume "$topic" --consumer "cmp-$topic" --partition "$p" --from earliest --commit none --format json 2>/dev/null |
			python3 -c 'import json,sys; [print(json.loads(l)["offset"], json.loads(l).get("key"), json.loads(l)["value"]) for l in sys.stdin]' >"$work/src-$topic-$p.txt"
		kcat -b "$B" -C -t "$topic" -p "$p" -o beginning -e -q -f '%o %k %s\n' 2>/dev/null | sed 's/^\([0-9]*\)  /\1 None /' >"$work/tgt-$topic-$p.txt"
		[ -s "$work/src-$topic-$p.txt" ] || { echo "$topic/$p: nothing read from the directory"; return 1; }
		if [ "$2" = identical ]; then
			cmp -s "$work/src-$topic-$p.txt" "$work/tgt-$topic-$p.txt" || { echo "$topic/$p differs"; return 1; }
		else
			cmp -s <(cut -d' ' -f2- "$work/src-$topic-$p.txt") <(cut -d' ' -f2- "$work/tgt-$topic-$p.txt") || { echo "$topic/$p differs"; return 1; }
		fi
	done
}
if command -v kcat >/dev/null; then
	check "plain on Kafka: every record once, at the same offsets" same_records plain identical
	check "multi on Kafka: every partition's records once, at the same offsets" same_records multi identical
	check "keys on Kafka: the compacted records once, in order" same_records keys mapped
fi
same_lag() {
	pb lag --brokers "$B" --json | lag_rows >"$work/lag-target.txt"
	diff "$work/lag-source.txt" "$work/lag-target.txt"
}
check "lag --brokers on Kafka: each consumer's lag as in the directory" same_lag

# The reverse: the cluster into a new data directory.
back=$work/back
reverse() {
	pb mirror --from "$B" --to-data "$back" --topics 'plain|multi' --groups >"$work/reverse.out" 2>&1 || { cat "$work/reverse.out"; return 1; }
	grep -q '^plain .* identical' "$work/reverse.out"
}
check "mirror --from Kafka --to-data: plain identical" reverse
same_back() {
	cmp -s <(pb --data "$data" consume plain --consumer x --from earliest --commit none) \
		<(pb --data "$back" consume plain --consumer x --from earliest --commit none) &&
		[ "$(pb --data "$back" lag --consumer early --json | json_sum lag)" = "$((200000 - 1234))" ]
}
check "the directory brought back: the same records, early's lag 198,766" same_back

# The CLI over the Kafka protocol, against Kafka.
K=(--brokers "$B")
check "topic create --brokers" pb topic create fresh --partitions 2 "${K[@]}"
check "produce --brokers" bash -c "seq 1 500 | '$work/passbook' produce fresh --brokers '$B' 2>/dev/null"
check "consume --brokers: 500 records" bash -c "[ \"\$('$work/passbook' consume fresh --consumer c1 --brokers '$B' 2>/dev/null | wc -l)\" = 500 ]"
lag_c1() { [ "$(pb lag --consumer c1 --brokers "$B" --json | json_sum lag)" = "$1" ]; }
check "lag --brokers: c1 read everything" lag_c1 0
check "replay --brokers --to earliest" pb replay fresh --consumer c1 --to earliest "${K[@]}"
check "lag --brokers after replay: all 500 again" lag_c1 500
check "offsets list --brokers" bash -c "'$work/passbook' offsets list --consumer c1 --brokers '$B' | grep -q '^c1 *fresh'"
check "offsets delete --brokers" pb offsets delete --consumer c1 "${K[@]}"
check "topic describe --brokers" bash -c "'$work/passbook' topic describe fresh --brokers '$B' | grep -q 'fresh'"
check "topic delete --brokers" pb topic delete fresh "${K[@]}"

kafka_stop
echo "apache-kafka: $passed passed, $failed failed"
save_results apache-kafka
[ "$failed" -eq 0 ]
