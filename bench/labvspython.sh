#!/usr/bin/env bash
# The lab against the course's Python lab, side by side on this machine:
# `passbook lab` (built from this checkout) and the Python script run in
# turn, ROUNDS times each (default 5), each in a fresh temporary
# directory; prints every wall time, the medians and passbook's share of
# the Python's time (the target is at most 1/3).
#
#   bench/labvspython.sh                    # our stand-in, bench/pylab/append_log.py
#   bench/labvspython.sh --python-lab FILE  # the course's own script
#   ROUNDS=9 bench/labvspython.sh
set -euo pipefail
cd "$(dirname "$0")/.."
py=$PWD/bench/pylab/append_log.py
if [[ ${1:-} == --python-lab ]]; then
	py=$(realpath "${2:?--python-lab needs a file}")
fi
rounds=${ROUNDS:-5}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/passbook" ./cmd/passbook

# wall CMD...: runs CMD in a fresh directory, output checked, and prints
# its wall time in seconds.
wall() {
	local dir out start end
	dir=$(mktemp -d -p "$work")
	start=$(date +%s.%N)
	out=$(cd "$dir" && TMPDIR="$dir" "$@")
	end=$(date +%s.%N)
	# Both print the course's tally; a run that did not is no figure.
	grep -q 'total records processed: *100,001' <<<"$out" || { echo "unexpected output from $*:" >&2; echo "$out" >&2; exit 1; }
	rm -rf "$dir"
	echo "$end - $start" | bc
}

median() { sort -n | awk '{v[NR]=$1} END{print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }

pb=() ; pyt=()
for ((i = 1; i <= rounds; i++)); do
	pyt+=("$(wall python3 "$py")")
	pb+=("$(wall "$work/passbook" lab --predict 99999,1,0,100000)")
	printf 'round %d: python %.3f s, passbook %.3f s\n' "$i" "${pyt[-1]}" "${pb[-1]}"
done
mp=$(printf '%s\n' "${pyt[@]}" | median)
mb=$(printf '%s\n' "${pb[@]}" | median)
printf 'median: python %.3f s (%s), passbook lab %.3f s: %.2fx of the Python'"'"'s time (target <= 0.33x)\n' \
	"$mp" "$(basename "$py")" "$mb" "$(echo "$mb / $mp" | bc -l)"
