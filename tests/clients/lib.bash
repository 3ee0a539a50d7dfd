# Shared by the client scripts: build passbook, run `passbook serve` on a
# free loopback port over a temporary data directory, stop it at exit
# (even on failure), and count checks.
#
#   . "$(dirname "$0")/lib.bash"
#   build_passbook          # builds $work/passbook (start_server does it too)
#   start_server            # sets $addr; $work is a temporary directory
#   check "name" command…   # runs the command; counts pass or fail
#   finish kcat             # stops the server, runs after_stop if the script
#                           # defines it, prints "kcat: N passed, M failed",
#                           # saves the checks for scripts/compat.sh, exits
#   maven_build POM GOAL    # mvn GOAL on POM; skips the script (exit 0) when
#                           # Maven Central cannot be reached
#   make_certs DIR CN       # a CA, a server certificate for 127.0.0.1 and a
#                           # client certificate with common name CN, in DIR
#   start_extra_server DIR ARGS…  # another passbook serve on data directory
#                           # DIR with ARGS (--sasl …); sets $extra_addr

set -u
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
work=$(mktemp -d)
server_pid=
extra_pids=()
passed=0
failed=0

cleanup() {
	if [ -n "$server_pid" ]; then
		kill -KILL "$server_pid" 2>/dev/null
		wait "$server_pid" 2>/dev/null
	fi
	local pid
	for pid in "${extra_pids[@]}"; do
		kill -KILL "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
	done
	rm -rf "$work"
}
trap cleanup EXIT

build_passbook() {
	[ -x "$work/passbook" ] && return
	(cd "$root" && go build -o "$work/passbook" ./cmd/passbook) || { echo "build failed"; exit 1; }
}

start_server() {
	build_passbook
	"$work/passbook" serve -v --data "$work/data" --kafka 127.0.0.1:0 "$@" 2>"$work/serve.log" &
	server_pid=$!
	addr=
	for _ in $(seq 1 100); do
		addr=$(sed -n 's/.*msg="kafka: listening" addr=\([^ ]*\).*/\1/p' "$work/serve.log" | head -n 1)
		[ -n "$addr" ] && break
		sleep 0.1
	done
	if [ -z "$addr" ]; then
		echo "the server did not start:"
		cat "$work/serve.log"
		exit 1
	fi
	echo "passbook serve on $addr"
}

# wait_listening LOG prints the Kafka address a server logged.
wait_listening() {
	local a=
	for _ in $(seq 1 100); do
		a=$(sed -n 's/.*msg="kafka: listening" addr=\([^ ]*\).*/\1/p' "$1" | head -n 1)
		[ -n "$a" ] && break
		sleep 0.1
	done
	echo "$a"
}

start_extra_server() {
	local dir=$1
	shift
	build_passbook
	"$work/passbook" serve -v --data "$dir" --kafka 127.0.0.1:0 "$@" 2>"$dir.log" &
	extra_pids+=($!)
	extra_addr=$(wait_listening "$dir.log")
	if [ -z "$extra_addr" ]; then
		echo "the server did not start:"
		cat "$dir.log"
		exit 1
	fi
}

make_certs() {
	local dir=$1 cn=$2
	mkdir -p "$dir"
	if ! command -v openssl >/dev/null; then
		(cd "$root" && go run ./tests/clients/certs "$dir" "$cn") || exit 1
		return
	fi
	(
		cd "$dir" &&
			openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
				-keyout ca-key.pem -out ca.pem -subj "/CN=passbook test CA" &&
			openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
				-keyout server-key.pem -out server.csr -subj "/CN=localhost" &&
			openssl x509 -req -in server.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial -days 1 -out server.pem \
				-extfile <(printf 'subjectAltName=IP:127.0.0.1,IP:::1,DNS:localhost\nextendedKeyUsage=serverAuth') &&
			openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
				-keyout client-key.pem -out client.csr -subj "/CN=$cn" &&
			openssl x509 -req -in client.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial -days 1 -out client.pem \
				-extfile <(printf 'extendedKeyUsage=clientAuth')
	) >/dev/null 2>&1 || { echo "openssl could not make the certificates"; exit 1; }
}

# maven_build POM GOAL builds a Maven project of the client scripts
# (java, streams, connect) with the versions it pins; when Maven Central
# cannot be reached it says so and exits the script 0, as skipped, and on
# any other failure it shows Maven's log and exits 1.
maven_build() {
	command -v mvn >/dev/null || { echo "mvn is not installed"; exit 1; }
	command -v java >/dev/null || { echo "java is not installed"; exit 1; }
	if mvn -q -B -f "$1" "$2" >"$work/mvn.log" 2>&1; then
		return 0
	fi
	if grep -qiE 'Could not transfer|Could not resolve|Unknown host|Connection refused|Network is unreachable' "$work/mvn.log"; then
		echo "skipped: Maven Central could not be reached to fetch the jars of $1:"
		grep -iE 'Could not|Unknown host|Connection' "$work/mvn.log" | head -n 3
		exit 0
	fi
	cat "$work/mvn.log"
	exit 1
}

check() {
	local name=$1
	shift
	if "$@"; then
		passed=$((passed + 1))
		echo "ok   $name" | tee -a "$work/checks.txt"
	else
		failed=$((failed + 1))
		echo "FAIL $name" | tee -a "$work/checks.txt"
	fi
}

# stop_server sends SIGTERM and checks that the shutdown was clean.
stop_server() {
	kill -TERM "$server_pid"
	wait "$server_pid"
	local rc=$?
	server_pid=
	[ "$rc" -eq 0 ] && grep -q "data directory closed cleanly" "$work/serve.log"
}

# negotiated prints the API versions the client used, from the server's log.
negotiated() {
	sed -n 's/.*msg="kafka: request" .* api=\([A-Za-z]*\) version=\([0-9]*\).*/\1 v\2/p' "$work/serve.log" | sort -u | paste -sd, - | sed 's/,/, /g'
}

finish() {
	echo "versions used: $(negotiated)"
	check "graceful shutdown on SIGTERM" stop_server
	if declare -F after_stop >/dev/null; then
		after_stop
	fi
	if [ "$failed" -gt 0 ]; then
		echo "--- server log (last 30 lines)"
		tail -n 30 "$work/serve.log"
	fi
	echo "$1: $passed passed, $failed failed"
	save_results "$1"
	[ "$failed" -eq 0 ]
	exit
}

# save_results NAME: with PASSBOOK_COMPAT_DIR set (scripts/compat.sh),
# every check's line — the script's own and those its client programs
# printed to $work/*.out — goes to $PASSBOOK_COMPAT_DIR/NAME.txt, for the
# compatibility table of docs/kafka.md.
save_results() {
	[ -n "${PASSBOOK_COMPAT_DIR:-}" ] || return 0
	mkdir -p "$PASSBOOK_COMPAT_DIR"
	cat "$work/checks.txt" "$work"/*.out 2>/dev/null | grep -E '^(ok|FAIL) ' >"$PASSBOOK_COMPAT_DIR/$1.txt" || true
}
