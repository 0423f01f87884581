#!/usr/bin/env bash
# What each part of txbox's outbox row costs the writer (BENCHMARKS.md, "What the outbox row costs").
# Each transaction inserts a business row and then, but for "bare", one event row; pgbench with
# 4 clients, prepared statements, ROUNDS alternating rounds of SECONDS_EACH each. Prints, per
# round and variant, tx/s and the backends' CPU per transaction in µs.
# Why the CPU: here tx/s is bound by the commits' WAL flushes, so a few µs of CPU hardly show in it.
# It is read where the script can read the server's postmaster (a local server, run as root or as
# its user): pgbench's connections end with each run, and the postmaster adds a reaped child's CPU
# time to its own (/proc/<pid>/stat, cutime and cstime); elsewhere it prints "-".
# Usage: txbox-bench/row-cost/run.sh [psql connection options], e.g. -h 127.0.0.1 -U postgres test
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
conn=("$@"); [ ${#conn[@]} -gt 0 ] || conn=(-h 127.0.0.1 -U postgres test)
rounds=${ROUNDS:-5}; seconds=${SECONDS_EACH:-10}
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
psql -q "${conn[@]}" -v ON_ERROR_STOP=1 -f "$here/setup.sql" 2>/dev/null
migrations="$here/../../txbox-postgres/src/main/resources/io/txbox/postgres"
for m in "txbox_ V8__outbox_check_function" "six_ V4__outbox_checks"; do
  read -r prefix version <<< "$m"
  sed -e 's/{schema}/rowcost/g' -e "s/{prefix}/$prefix/g" "$migrations/$version.sql" | PGOPTIONS=--client-min-messages=warning psql -q "${conn[@]}" -v ON_ERROR_STOP=1
done
order="INSERT INTO rowcost.orders (customer, total) VALUES ('customer-' || :client_id, 42.5);"
printf 'BEGIN;\n%s\nCOMMIT;\n' "$order" > "$work/bare.sql"
printf 'BEGIN;\n%s\n%s\nCOMMIT;\n' "$order" "INSERT INTO rowcost.dbz (id, aggregatetype, aggregateid, type, payload)
 VALUES (gen_random_uuid(), 'orders', 'customer-' || (random() * 1000)::int, 'OrderPlaced',
 ('{\"x\":\"' || repeat('x', 290) || '\"}')::jsonb);" > "$work/dbz.sql"
declare -A table=([full]=txbox_outbox [sixchecks]=six_outbox [nochecks]=nochecks [notgenerated]=notgenerated
  [positionkey]=positionkey)
for t in full sixchecks nochecks notgenerated positionkey; do
  printf 'BEGIN;\n%s\n%s\nCOMMIT;\n' "$order" "INSERT INTO rowcost.${table[$t]} (id, key, type, version, destination, payload,
 content_type, headers, created_at, available_at) VALUES (gen_random_uuid(), 'customer-' || (random() * 1000)::int,
 'OrderPlaced', 1, 'orders', convert_to(repeat('x', 300), 'UTF8'), 'application/json',
 jsonb_object(ARRAY['traceparent'], ARRAY['00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01']), now(), NULL);" \
    > "$work/$t.sql"
done
postmaster=$(head -1 "$(psql -Atq "${conn[@]}" -c "SHOW data_directory")/postmaster.pid" 2>/dev/null || true)
children_cpu() { # clock ticks
  if [ -r "/proc/$postmaster/stat" ]; then awk '{ print $16 + $17 }' "/proc/$postmaster/stat"; else echo -; fi
}
for r in $(seq "$rounds"); do
  for v in bare dbz full sixchecks nochecks notgenerated positionkey; do
    before=$(children_cpu)
    out=$(pgbench "${conn[@]}" -n -M prepared -c 4 -j 2 -T "$seconds" -f "$work/$v.sql")
    sleep 0.5 # the postmaster reaps the ended backends
    after=$(children_cpu)
    tps=$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' <<< "$out")
    tx=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' <<< "$out")
    cpu=-; [ "$before" = - ] || cpu=$(( (after - before) * 1000000 / $(getconf CLK_TCK) / tx ))
    echo "$r $v $tps $cpu"
  done
done
PGOPTIONS=--client-min-messages=warning psql -q "${conn[@]}" -c "DROP SCHEMA rowcost CASCADE"
