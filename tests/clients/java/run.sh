#!/usr/bin/env bash
# The Java Kafka client (org.apache.kafka:kafka-clients, version pinned
# in pom.xml) against `passbook serve`: admin calls (configs described
# and altered, partitions created, records deleted), idempotent produce
# with every codec, classic and KIP-848 consumer groups, transactions
# and fencing (ClientsCheck plain), then
# TLS + SCRAM-SHA-256 + ACLs against a server with --tls-cert --sasl
# --authorize (ClientsCheck secure). Maven fetches the jars from Maven
# Central into ~/.m2 and builds into target/ here; if Maven Central
# cannot be reached the script says so and exits 0 as skipped.
dir=$(cd "$(dirname "$0")" && pwd)
. "$dir/../lib.bash"
maven_build "$dir/pom.xml" compile
cp="$dir/target/classes:$(cat "$dir/target/classpath.txt")"

start_server
java -cp "$cp" passbook.ClientsCheck "$addr" | tee "$work/java.out"

make_certs "$work/certs" unused
sec=$work/secure
for u in admin alice; do
	echo "$u-secret" | "$work/passbook" --data "$sec" user add "$u" --mechanism scram-sha-256 --password-stdin >/dev/null || exit 1
done
"$work/passbook" --data "$sec" topic create secure >/dev/null || exit 1
"$work/passbook" --data "$sec" topic create forbidden >/dev/null || exit 1
"$work/passbook" --data "$sec" acl add --allow User:alice --producer --topic secure >/dev/null || exit 1
"$work/passbook" --data "$sec" acl add --allow User:alice --consumer --topic secure --group secure-readers >/dev/null || exit 1
start_extra_server "$sec" --tls-cert "$work/certs/server.pem" --tls-key "$work/certs/server-key.pem" \
	--sasl scram-sha-256,plain --authorize --super-users User:admin
echo "passbook serve --tls-cert --sasl scram-sha-256,plain --authorize on $extra_addr"
java -cp "$cp" passbook.ClientsCheck "$extra_addr" secure "$work/certs/ca.pem" alice alice-secret | tee "$work/secure.out"

passed=$(cat "$work/java.out" "$work/secure.out" | grep -c '^ok')
failed=$(cat "$work/java.out" "$work/secure.out" | grep -c '^FAIL')
for out in java secure; do
	grep -q '^java: ' "$work/$out.out" || { echo "FAIL ClientsCheck $out did not finish"; failed=$((failed + 1)); }
done
finish java
