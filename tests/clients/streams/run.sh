#!/usr/bin/env bash
# Kafka Streams against `passbook serve`: word count (a repartition topic,
# a state store with its changelog topic) under exactly_once_v2 over a
# fixed input of 20,000 lines that arrives over about 20 s, while passbook
# is killed by SIGKILL and restarted twice and the application once. A read_committed reader of
# the output must then see, for every word, the counts 1, 2, …, n: none
# missing, none twice (WordCount.java says why that is the exactly-once
# test). Versions pinned in pom.xml; if Maven Central cannot be reached
# the script says so and exits 0 as skipped.
#
#   STREAMS_GUARANTEE  processing.guarantee (exactly_once_v2)
#   STREAMS_KILLS      SIGKILLs during the run, passbook and the
#                      application in turn (3: passbook, the app, passbook)
dir=$(cd "$(dirname "$0")" && pwd)
. "$dir/../lib.bash"
guarantee=${STREAMS_GUARANTEE:-exactly_once_v2}
kills=${STREAMS_KILLS:-3}
lines=20000
maven_build "$dir/pom.xml" compile
cp="$dir/target/classes:$(cat "$dir/target/classpath.txt")"
# wc runs one mode of WordCount. Background jobs call java directly, so
# that $! is the JVM's PID (a backgrounded function would be a subshell,
# and a SIGKILL to it would leave the JVM running).
wc() { java -cp "$cp" passbook.WordCount "$@"; }

# A fixed port, so that the restarted server is where the clients look.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
start_server --kafka "127.0.0.1:$port"
check "wc-input and wc-output created" wc create "$addr"

java -cp "$cp" passbook.WordCount run "$addr" "$guarantee" "$work/state" >"$work/app.log" 2>&1 &
app_pid=$!
extra_pids+=("$app_pid")
# The input arrives over about 20 s while the application runs, so that
# each kill below falls in the middle of its transactions.
java -cp "$cp" passbook.WordCount produce "$addr" "$lines" 1000 >"$work/produce.log" 2>&1 &
producer_pid=$!
extra_pids+=("$producer_pid")

# restart_server kills passbook with SIGKILL and starts it again on the
# same data directory and port.
restart_server() {
	kill -KILL "$server_pid"
	wait "$server_pid" 2>/dev/null
	server_pid=
	mv "$work/serve.log" "$work/serve.log.$1"
	start_server --kafka "127.0.0.1:$port" >/dev/null
	[ "$addr" = "127.0.0.1:$port" ]
}
# restart_app kills the application with SIGKILL, in the middle of its
# transactions, and starts it again with the same state directory and the
# same group.instance.id: a static member that takes its tasks back.
restart_app() {
	kill -KILL "$app_pid"
	wait "$app_pid" 2>/dev/null
	java -cp "$cp" passbook.WordCount run "$addr" "$guarantee" "$work/state" >>"$work/app.log" 2>&1 &
	app_pid=$!
	extra_pids+=("$app_pid")
}
# The kills alternate, passbook first: passbook, the application,
# passbook, …, spread over the 20 s the input takes.
for i in $(seq 1 "$kills"); do
	sleep $((20 / (kills + 1)))
	if [ $((i % 2)) -eq 1 ]; then
		check "SIGKILL of passbook while the input arrives and the application runs, restarted" restart_server "$i"
	else
		check "SIGKILL of the application mid-transaction, restarted" restart_app
	fi
done
check "the producer wrote all $lines lines" wait "$producer_pid"

deadline=$((SECONDS + 240))
result=
while [ $SECONDS -lt $deadline ]; do
	out=$(wc verify "$addr" "$lines" 2>&1)
	rc=$?
	case $rc in
	0 | 1) result=$out; break ;;
	esac
	kill -0 "$app_pid" 2>/dev/null || { result="the application exited"; break; }
	sleep 1
done
echo "    ${result:-timed out after 240 s: $out}"
check "every word counted 1 … n under $guarantee, nothing missing or twice ($kills kills)" grep -q '^done' <<<"$result"
kill -TERM "$app_pid" 2>/dev/null && wait "$app_pid" 2>/dev/null
if [ "$failed" -gt 0 ]; then
	echo "--- application log (last 20 lines)"
	tail -n 20 "$work/app.log"
fi
finish streams
