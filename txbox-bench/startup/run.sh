#!/usr/bin/env bash
# Relay start-up, side by side: launch of `java -jar <jar> relay` to its first 200 on /health/live
# (what a kubelet's first probe waits for), for two jars in alternating rounds, against the local
# PostgreSQL (trust auth) and NATS. Usage:
#   txbox-bench/startup/run.sh <jar A> <jar B> [rounds]     (default 5 rounds)
# Prints one line per start: the jar's label (A or B) and milliseconds.
set -euo pipefail
a=$1; b=$2; rounds=${3:-5}
url="jdbc:postgresql://127.0.0.1:5432/test?user=postgres"
schema=startup_bench
port=19470
psql -q -h 127.0.0.1 -U postgres -d test -c "DROP SCHEMA IF EXISTS $schema CASCADE; CREATE SCHEMA $schema"
java -jar "$a" migrate --jdbc-url "$url" --schema "$schema" >/dev/null

start_once() { # jar label
  local started pid
  started=$(date +%s%N)
  java -jar "$1" relay --jdbc-url "$url" --schema "$schema" --broker nats --nats-servers nats://127.0.0.1:4222 \
    --http-port "$port" >/dev/null 2>&1 &
  pid=$!
  until curl -sf -o /dev/null "http://127.0.0.1:$port/health/live"; do sleep 0.01; done
  echo "$2 $(( ($(date +%s%N) - started) / 1000000 )) ms"
  kill "$pid"; wait "$pid" 2>/dev/null || true
}

for ((i = 1; i <= rounds; i++)); do
  start_once "$a" A
  start_once "$b" B
done
