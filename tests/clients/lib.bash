# Shared by the client scripts: build passbook, run `passbook serve` on a
# free loopback port over a temporary data directory, stop it at exit
# (even on failure), and count checks.
#
#   . "$(dirname "$0")/lib.bash"
#   build_passbook          # builds $work/passbook (start_server does it too)
#   start_server            # sets $addr; $work is a temporary directory
#   check "name" command…   # runs the command; counts pass or fail
#   finish kcat             # stops the server, runs after_stop if the script
#                           # defines it, prints "kcat: N passed, M failed", exits

set -u
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
work=$(mktemp -d)
server_pid=
passed=0
failed=0

cleanup() {
	if [ -n "$server_pid" ]; then
		kill -KILL "$server_pid" 2>/dev/null
		wait "$server_pid" 2>/dev/null
	fi
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

check() {
	local name=$1
	shift
	if "$@"; then
		passed=$((passed + 1))
		echo "ok   $name"
	else
		failed=$((failed + 1))
		echo "FAIL $name"
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
	[ "$failed" -eq 0 ]
	exit
}
