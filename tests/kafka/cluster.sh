# Apache Kafka from its own jars, as a cluster of KRaft nodes on loopback
# ports, for the scripts that check passbook against a real Kafka. Source
# it, then:
#
#   . tests/kafka/cluster.sh
#   kafka_jars || exit 0      # the jars, from Maven Central (cached); says
#                             # what was refused and returns 1 if they cannot be had
#   kafka_start 3             # N combined controller+broker nodes; sets
#                             # KAFKA_BOOTSTRAP=127.0.0.1:P1,127.0.0.1:P2,…
#   …                         # use "$KAFKA_BOOTSTRAP"
#   kafka_stop                # stops every node; call it from your EXIT trap
#                             # too (trap 'kafka_stop' EXIT), so that a failure
#                             # leaves no JVM behind
#
# kafka_kill_node I stops node I (1…N) with SIGKILL and kafka_restart_node
# I starts it again, for failure tests. KAFKA_VERSION (default 4.1.0)
# picks the release: tests/kafka/pom.xml pins the default; KAFKA_JARS is
# where the jars go (default ~/.cache/passbook/kafka-jars-$KAFKA_VERSION,
# outside the repository). Each node's log is $KAFKA_WORK/nodeI.log.
# Needs java (17 or later), mvn and python3 (to pick free ports).

KAFKA_VERSION=${KAFKA_VERSION:-4.1.0}
KAFKA_JARS=${KAFKA_JARS:-${XDG_CACHE_HOME:-$HOME/.cache}/passbook/kafka-jars-$KAFKA_VERSION}
KAFKA_WORK=
KAFKA_BOOTSTRAP=
_kafka_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
_kafka_pids=()
_kafka_ports=()
_kafka_cports=()

# kafka_jars fetches kafka_2.13 and its runtime dependencies with Maven
# into $KAFKA_JARS, once.
kafka_jars() {
	if [ -f "$KAFKA_JARS/.complete" ]; then
		return 0
	fi
	local tool
	for tool in java mvn python3; do
		if ! command -v "$tool" >/dev/null; then
			echo "kafka: $tool is not installed: cannot run Apache Kafka from its jars"
			return 1
		fi
	done
	mkdir -p "$KAFKA_JARS"
	local log
	log=$(mktemp)
	if ! mvn -q -B -Dstyle.color=never -f "$_kafka_dir/pom.xml" -Dkafka.version="$KAFKA_VERSION" \
		dependency:copy-dependencies -DoutputDirectory="$KAFKA_JARS" >"$log" 2>&1; then
		echo "kafka: Maven could not fetch org.apache.kafka:kafka_2.13:$KAFKA_VERSION and its dependencies from Maven Central:"
		sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -E 'Could not|refused|denied|[Uu]nknown host|status code|Non-resolvable|[Tt]ransfer failed|[Cc]onnect' | head -n 5 | sed 's/^/  /'
		rm -f "$log"
		return 1
	fi
	rm -f "$log"
	if ! ls "$KAFKA_JARS"/kafka_2.13-"$KAFKA_VERSION".jar >/dev/null 2>&1; then
		echo "kafka: Maven ran, but $KAFKA_JARS has no kafka_2.13-$KAFKA_VERSION.jar"
		return 1
	fi
	touch "$KAFKA_JARS/.complete"
}

# _kafka_free_ports N prints N distinct loopback ports that were free (each
# held until all are picked).
_kafka_free_ports() {
	python3 - "$1" <<'PY'
import socket, sys
held = []
for _ in range(int(sys.argv[1])):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    held.append(s)
print(" ".join(str(s.getsockname()[1]) for s in held))
PY
}

_kafka_jvm=(-Xms256m -Xmx512m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xshare:auto -Dlog4j2.level=WARN)
_kafka_java() {
	java "${_kafka_jvm[@]}" -cp "$KAFKA_JARS/*" "$@"
}

# kafka_start N starts N KRaft nodes, each both controller and broker,
# and returns once every broker answers and sees all N: KAFKA_BOOTSTRAP
# lists them.
kafka_start() {
	local n=${1:-3} i voters="" ports
	KAFKA_WORK=$(mktemp -d "${TMPDIR:-/tmp}/passbook-kafka.XXXXXX")
	read -r -a ports <<<"$(_kafka_free_ports $((2 * n)))"
	_kafka_ports=("${ports[@]:0:n}")
	_kafka_cports=("${ports[@]:n:n}")
	for i in $(seq 1 "$n"); do
		voters+="${voters:+,}$i@127.0.0.1:${_kafka_cports[i - 1]}"
	done
	local rf=$((n < 3 ? n : 3))
	local cluster_id
	cluster_id=$(_kafka_java kafka.tools.StorageTool random-uuid 2>/dev/null | tail -n 1)
	for i in $(seq 1 "$n"); do
		cat >"$KAFKA_WORK/node$i.properties" <<PROPS
process.roles=broker,controller
node.id=$i
controller.quorum.voters=$voters
listeners=PLAINTEXT://127.0.0.1:${_kafka_ports[i - 1]},CONTROLLER://127.0.0.1:${_kafka_cports[i - 1]}
advertised.listeners=PLAINTEXT://127.0.0.1:${_kafka_ports[i - 1]}
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
log.dirs=$KAFKA_WORK/node$i
num.partitions=1
default.replication.factor=$rf
min.insync.replicas=1
offsets.topic.replication.factor=$rf
offsets.topic.num.partitions=3
transaction.state.log.replication.factor=$rf
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=$rf
group.initial.rebalance.delay.ms=0
log.flush.interval.messages=9223372036854775807
PROPS
		if ! _kafka_java kafka.tools.StorageTool format -t "$cluster_id" -c "$KAFKA_WORK/node$i.properties" >"$KAFKA_WORK/format$i.log" 2>&1; then
			echo "kafka: formatting node $i failed:"
			cat "$KAFKA_WORK/format$i.log"
			return 1
		fi
	done
	for i in $(seq 1 "$n"); do
		_kafka_start_node "$i"
	done
	local bootstrap="" deadline=$((SECONDS + 120))
	for i in $(seq 1 "$n"); do
		bootstrap+="${bootstrap:+,}127.0.0.1:${_kafka_ports[i - 1]}"
	done
	KAFKA_BOOTSTRAP=$bootstrap
	# Ready when every broker's port answers and Metadata names all n.
	until _kafka_ready "$n"; do
		if [ $SECONDS -gt $deadline ]; then
			echo "kafka: the cluster did not come up within 120 s; node logs:"
			tail -n 20 "$KAFKA_WORK"/node*.log
			return 1
		fi
		sleep 0.5
	done
	echo "kafka: $n KRaft nodes of Apache Kafka $KAFKA_VERSION at $KAFKA_BOOTSTRAP"
}

_kafka_start_node() {
	local i=$1
	# java itself in the background, not _kafka_java: a backgrounded
	# function runs in a subshell, $! would be the subshell's PID, and a
	# kill of it would leave the JVM running.
	java "${_kafka_jvm[@]}" -cp "$KAFKA_JARS/*" kafka.Kafka "$KAFKA_WORK/node$i.properties" >>"$KAFKA_WORK/node$i.log" 2>&1 &
	_kafka_pids[i - 1]=$!
}

# _kafka_ready N: every port accepts, and the first broker's metadata
# has N brokers (kcat when installed; else the ports alone, twice).
_kafka_ready() {
	local n=$1 port
	for port in "${_kafka_ports[@]}"; do
		(exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null || return 1
	done
	if command -v kcat >/dev/null; then
		[ "$(kcat -b "$KAFKA_BOOTSTRAP" -L -m 5 2>/dev/null | grep -c '^  broker ')" = "$n" ]
		return
	fi
	return 0
}

kafka_kill_node() {
	local pid=${_kafka_pids[$1 - 1]}
	kill -KILL "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
}

kafka_restart_node() { _kafka_start_node "$1"; }

# kafka_stop stops every node (SIGTERM, then SIGKILL after 20 s) and
# removes the nodes' directories.
kafka_stop() {
	local pid
	for pid in "${_kafka_pids[@]}"; do
		kill -TERM "$pid" 2>/dev/null
	done
	local deadline=$((SECONDS + 20))
	for pid in "${_kafka_pids[@]}"; do
		while kill -0 "$pid" 2>/dev/null && [ $SECONDS -lt $deadline ]; do
			sleep 0.2
		done
		kill -KILL "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
	done
	_kafka_pids=()
	if [ -n "$KAFKA_WORK" ] && [ -z "${KAFKA_KEEP:-}" ]; then
		rm -rf "$KAFKA_WORK"
	fi
}
