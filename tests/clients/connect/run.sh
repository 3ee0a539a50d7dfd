#!/usr/bin/env bash
# Kafka Connect against `passbook serve`: a distributed worker (its
# config, offset and status topics on passbook) runs the file source and
# sink connectors, so a file goes through a topic into another file,
# unchanged. The worker is then stopped, the file grows, and a new
# worker resumes both connectors from what is stored on passbook: the
# output is the whole input, once. Versions pinned in pom.xml; if Maven
# Central cannot be reached the script says so and exits 0 as skipped.
dir=$(cd "$(dirname "$0")" && pwd)
. "$dir/../lib.bash"
command -v curl >/dev/null || { echo "curl is not installed"; exit 1; }
maven_build "$dir/pom.xml" generate-resources
cp=$(cat "$dir/target/classpath.txt")
start_server

rest=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat >"$work/worker.properties" <<PROPS
bootstrap.servers=$addr
group.id=passbook-connect
key.converter=org.apache.kafka.connect.storage.StringConverter
value.converter=org.apache.kafka.connect.storage.StringConverter
config.storage.topic=connect-configs
offset.storage.topic=connect-offsets
status.storage.topic=connect-status
config.storage.replication.factor=1
offset.storage.replication.factor=1
status.storage.replication.factor=1
offset.flush.interval.ms=500
listeners=http://127.0.0.1:$rest
PROPS
connect_pid=
start_worker() {
	java -cp "$cp" -Dorg.slf4j.simpleLogger.defaultLogLevel=warn \
		org.apache.kafka.connect.cli.ConnectDistributed "$work/worker.properties" >>"$work/connect.log" 2>&1 &
	connect_pid=$!
	extra_pids+=("$connect_pid")
	for _ in $(seq 1 600); do
		curl -fs "http://127.0.0.1:$rest/connectors" >/dev/null 2>&1 && return 0
		kill -0 "$connect_pid" 2>/dev/null || break
		sleep 0.1
	done
	echo "the Connect worker did not start:"
	tail -n 30 "$work/connect.log"
	return 1
}
stop_worker() {
	kill -TERM "$connect_pid" && wait "$connect_pid"
	local rc=$?
	connect_pid=
	# 143: the JVM's exit status for SIGTERM, after its shutdown hooks ran.
	[ "$rc" -eq 0 ] || [ "$rc" -eq 143 ]
}
# lines FILE prints its line count (0 while it does not exist).
lines() { [ -f "$1" ] && wc -l <"$1" || echo 0; }
# wait_lines FILE N waits up to 60 s for FILE to have N lines.
wait_lines() {
	for _ in $(seq 1 600); do
		[ "$(lines "$1")" -ge "$2" ] && return 0
		sleep 0.1
	done
	echo "    $1 has $(lines "$1") of $2 lines"
	return 1
}
post() {
	curl -fs -X POST -H 'Content-Type: application/json' --data "$2" "http://127.0.0.1:$rest/connectors" >/dev/null ||
		{ echo "    POST $1 failed"; return 1; }
}
status_running() {
	local s
	s=$(curl -fs "http://127.0.0.1:$rest/connectors/$1/status") || return 1
	[ "$(echo "$s" | grep -o '"state":"RUNNING"' | wc -l)" -eq 2 ] || { echo "    $1: $s"; return 1; }
}

seq 1 1000 | sed 's/^/line /' >"$work/in.txt"
check "a distributed worker starts with its three topics on passbook" start_worker
check "the file source connector is created" post source \
	"{\"name\":\"source\",\"config\":{\"connector.class\":\"org.apache.kafka.connect.file.FileStreamSourceConnector\",\"tasks.max\":\"1\",\"file\":\"$work/in.txt\",\"topic\":\"lines\"}}"
check "the file sink connector is created" post sink \
	"{\"name\":\"sink\",\"config\":{\"connector.class\":\"org.apache.kafka.connect.file.FileStreamSinkConnector\",\"tasks.max\":\"1\",\"file\":\"$work/out.txt\",\"topics\":\"lines\"}}"
check "1,000 lines reach the output file" wait_lines "$work/out.txt" 1000
check "the output equals the input" cmp -s "$work/in.txt" "$work/out.txt"
check "both connectors and their tasks are RUNNING" bash -c "$(declare -f status_running); rest=$rest; status_running source && status_running sink"
check "Connect's topics are on passbook" bash -c "\"$work/passbook\" topic list --brokers $addr | grep -q connect-configs && \"$work/passbook\" topic list --brokers $addr | grep -q connect-offsets && \"$work/passbook\" topic list --brokers $addr | grep -q connect-status"
check "the worker stops on SIGTERM" stop_worker
seq 1001 2000 | sed 's/^/line /' >>"$work/in.txt"
check "a new worker reads the connectors back from connect-configs" start_worker
check "it resumes from connect-offsets and the group's offsets: 2,000 lines" wait_lines "$work/out.txt" 2000
sleep 2 # anything written twice would arrive now
check "the output equals the input, every line once" cmp -s "$work/in.txt" "$work/out.txt"
stop_worker
[ "$failed" -gt 0 ] && { echo "--- connect log (last 30 lines)"; tail -n 30 "$work/connect.log"; }
finish connect
