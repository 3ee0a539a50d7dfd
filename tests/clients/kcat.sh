#!/usr/bin/env bash
# kcat (librdkafka) against `passbook serve`: produce with -P, consume
# with -C, byte-for-byte comparisons, offsets, keys, acks, the four
# compression codecs, and balanced consumers in a group (-G) that commit;
# then security: SASL_SSL with SCRAM-SHA-256 and PLAIN against a server
# with --tls-cert --sasl --authorize, and SSL with a client certificate
# (--tls-client-ca) whose CN is the principal the ACLs name.
# Needs kcat (Debian package kcat) and go; openssl if installed (else the
# certificates come from `go run ./tests/clients/certs`).
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

# Security. Certificates for 127.0.0.1 and a client certificate for CN
# kcat-client; users admin (a super user) and alice (a producer of
# "secure" only), each with SCRAM-SHA-256 (PLAIN checks it too).
make_certs "$work/certs" kcat-client
sec_data=$work/secure
for u in admin alice; do
	echo "$u-secret" | "$work/passbook" --data "$sec_data" user add "$u" --mechanism scram-sha-256 --password-stdin >/dev/null || exit 1
done
"$work/passbook" --data "$sec_data" acl add --allow User:alice --producer --topic secure >/dev/null || exit 1
start_extra_server "$sec_data" --tls-cert "$work/certs/server.pem" --tls-key "$work/certs/server-key.pem" \
	--sasl scram-sha-256,plain --authorize --super-users User:admin
sasl_addr=$extra_addr
echo "passbook serve --tls-cert --sasl scram-sha-256,plain --authorize on $sasl_addr"
ks() { # user password mechanism kcat-args…
	local user=$1 pass=$2 mech=$3
	shift 3
	timeout 30 kcat -b "$sasl_addr" -X security.protocol=SASL_SSL -X sasl.mechanisms="$mech" \
		-X sasl.username="$user" -X sasl.password="$pass" -X ssl.ca.location="$work/certs/ca.pem" "$@"
}
head -n 500 "$work/in.txt" >"$work/in500.txt"
sasl_scram() {
	ks admin admin-secret SCRAM-SHA-256 -t scrammed -P <"$work/in500.txt" 2>/dev/null &&
		ks admin admin-secret SCRAM-SHA-256 -t scrammed -C -o beginning -e >"$work/scrammed.txt" 2>/dev/null &&
		cmp -s "$work/in500.txt" "$work/scrammed.txt"
}
check "SASL_SSL SCRAM-SHA-256 (super user): produce 500 lines and consume them back" sasl_scram
sasl_plain_acl() {
	ks alice alice-secret PLAIN -t secure -P <"$work/in500.txt" 2>/dev/null &&
		ks admin admin-secret SCRAM-SHA-256 -t secure -C -o beginning -e 2>/dev/null | cmp -s "$work/in500.txt" -
}
check "SASL_SSL PLAIN as alice: produce to a topic her ACL allows" sasl_plain_acl
sasl_denied() {
	! ks alice alice-secret PLAIN -G kc-denied -e secure >/dev/null 2>"$work/denied.err" &&
		grep -q "Group authorization failed" "$work/denied.err"
}
check "alice may not read it in a group: Group authorization failed" sasl_denied
sasl_hidden() {
	ks alice alice-secret PLAIN -L -t scrammed 2>/dev/null | grep -q 'topic "scrammed" with 0 partitions: Broker: Topic authorization failed'
}
check "nor see another topic: -L says Topic authorization failed" sasl_hidden
sasl_wrong() {
	! ks alice wrong-secret SCRAM-SHA-256 -L >/dev/null 2>"$work/wrong.err" &&
		grep -q "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256" "$work/wrong.err"
}
check "a wrong password: Kafka's authentication error" sasl_wrong
sasl_unknown() {
	! ks mallory wrong-secret SCRAM-SHA-256 -L >/dev/null 2>"$work/unknown.err" &&
		grep -q "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256" "$work/unknown.err"
}
check "an unknown user: the same error" sasl_unknown

# SSL with client certificates: the principal is User:kcat-client.
mtls_data=$work/mtls
"$work/passbook" --data "$mtls_data" acl add --allow User:kcat-client --producer --consumer --topic certified --group kc-mtls >/dev/null || exit 1
start_extra_server "$mtls_data" --tls-cert "$work/certs/server.pem" --tls-key "$work/certs/server-key.pem" \
	--tls-client-ca "$work/certs/ca.pem" --authorize
mtls_addr=$extra_addr
echo "passbook serve --tls-cert --tls-client-ca --authorize on $mtls_addr"
kt() {
	timeout 30 kcat -b "$mtls_addr" -X security.protocol=SSL -X ssl.ca.location="$work/certs/ca.pem" \
		-X ssl.certificate.location="$work/certs/client.pem" -X ssl.key.location="$work/certs/client-key.pem" "$@"
}
ssl_mtls() {
	kt -t certified -P <"$work/in500.txt" 2>/dev/null &&
		kt -G kc-mtls -X auto.offset.reset=earliest -e certified 2>/dev/null >"$work/certified.txt" &&
		cmp -s "$work/in500.txt" "$work/certified.txt"
}
check "SSL with a client certificate: User:kcat-client produces and consumes in its group" ssl_mtls
ssl_denied() {
	! kt -t elsewhere -P <"$work/in500.txt" 2>"$work/elsewhere.err" && grep -q "Topic authorization failed" "$work/elsewhere.err"
}
check "SSL: a topic its ACLs do not name is refused" ssl_denied
ssl_nocert() {
	! timeout 30 kcat -b "$mtls_addr" -q -X security.protocol=SSL -X ssl.ca.location="$work/certs/ca.pem" -L >/dev/null 2>&1
}
check "SSL without a client certificate: refused" ssl_nocert

finish kcat
