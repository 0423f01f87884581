#!/usr/bin/env bash
# What each part of txbox's outbox row costs the writer (BENCHMARKS.md, "What the outbox row costs").
# Each transaction inserts a business row and then, but for "bare", one event row; pgbench with
# 4 clients, prepared statements, ROUNDS alternating rounds of SECONDS each. Prints tx/s per round.
# Usage: txbox-bench/row-cost/run.sh [psql connection options], e.g. -h 127.0.0.1 -U postgres test
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
conn=("$@"); [ ${#conn[@]} -gt 0 ] || conn=(-h 127.0.0.1 -U postgres test)
rounds=${ROUNDS:-5}; seconds=${SECONDS_EACH:-10}
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
psql -q "${conn[@]}" -v ON_ERROR_STOP=1 -f "$here/setup.sql" 2>/dev/null
order="INSERT INTO rowcost.orders (customer, total) VALUES ('customer-' || :client_id, 42.5);"
printf 'BEGIN;\n%s\nCOMMIT;\n' "$order" > "$work/bare.sql"
printf 'BEGIN;\n%s\n%s\nCOMMIT;\n' "$order" "INSERT INTO rowcost.dbz (id, aggregatetype, aggregateid, type, payload)
 VALUES (gen_random_uuid(), 'orders', 'customer-' || (random() * 1000)::int, 'OrderPlaced',
 ('{\"x\":\"' || repeat('x', 290) || '\"}')::jsonb);" > "$work/dbz.sql"
for t in full nochecks notgenerated positionkey; do
  printf 'BEGIN;\n%s\n%s\nCOMMIT;\n' "$order" "INSERT INTO rowcost.$t (id, key, type, version, destination, payload,
 content_type, headers, created_at, available_at) VALUES (gen_random_uuid(), 'customer-' || (random() * 1000)::int,
 'OrderPlaced', 1, 'orders', convert_to(repeat('x', 300), 'UTF8'), 'application/json',
 jsonb_object(ARRAY['traceparent'], ARRAY['00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01']), now(), NULL);" \
    > "$work/$t.sql"
done
for r in $(seq "$rounds"); do
  for v in bare dbz full nochecks notgenerated positionkey; do
    tps=$(pgbench "${conn[@]}" -n -M prepared -c 4 -j 2 -T "$seconds" -f "$work/$v.sql" | sed -n 's/^tps = \([0-9.]*\).*/\1/p')
    echo "$r $v $tps"
  done
done
psql -q "${conn[@]}" -c "DROP SCHEMA rowcost CASCADE"
