#!/usr/bin/env bash
# kafkajs against `passbook serve`: produce 1,000 records, consume them with
# consumer groups, and the admin calls (test.js); transactions (txn.js); then ssl + sasl
# (SCRAM-SHA-256 and PLAIN) against a server with --tls-cert --sasl
# --authorize, with ACLs that allow and deny (secure.js). Needs node and
# npm (installs kafkajs from the lockfile), and openssl or go for the
# certificates.
dir=$(cd "$(dirname "$0")" && pwd)
. "$dir/../lib.bash"
command -v node >/dev/null || { echo "node is not installed"; exit 1; }
if [ ! -d "$dir/node_modules/kafkajs" ]; then
	(cd "$dir" && npm ci --no-audit --no-fund --silent) || { echo "npm ci failed"; exit 1; }
fi
start_server
node "$dir/test.js" "$addr" | tee "$work/node.out"
node "$dir/txn.js" "$addr" | tee "$work/txn.out"

make_certs "$work/certs" unused
sec=$work/secure
for u in admin alice; do
	echo "$u-secret" | "$work/passbook" --data "$sec" user add "$u" --mechanism scram-sha-256 --password-stdin >/dev/null || exit 1
done
"$work/passbook" --data "$sec" topic create secure >/dev/null || exit 1
"$work/passbook" --data "$sec" acl add --allow User:alice --producer --topic secure >/dev/null || exit 1
"$work/passbook" --data "$sec" acl add --allow User:alice --consumer --topic secure --group secure-readers >/dev/null || exit 1
start_extra_server "$sec" --tls-cert "$work/certs/server.pem" --tls-key "$work/certs/server-key.pem" \
	--sasl scram-sha-256,plain --authorize --super-users User:admin
echo "passbook serve --tls-cert --sasl scram-sha-256,plain --authorize on $extra_addr"
node "$dir/secure.js" "$extra_addr" "$work/certs/ca.pem" | tee "$work/secure.out"

passed=$(cat "$work/node.out" "$work/txn.out" "$work/secure.out" | grep -c '^ok')
failed=$(cat "$work/node.out" "$work/txn.out" "$work/secure.out" | grep -c '^FAIL')
for out in node txn secure; do
	grep -q '^node: ' "$work/$out.out" || { echo "FAIL the node script $out did not finish"; failed=$((failed + 1)); }
done
finish kafkajs
