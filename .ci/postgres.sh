#!/usr/bin/env bash
# A throw-away PostgreSQL cluster on loopback for the tests that need one (the PostgreSQL session
# store). `start DIR PORT` makes and starts it and prints its URL; `stop DIR` stops it and removes
# DIR; `halt DIR` and `run DIR PORT` stop and restart the server keeping its data (the outage
# test). As root the server runs as the `postgres` user (the server refuses to run as root).
# The tests read the URL from ZC_TEST_POSTGRES_URL and make one database per test.
set -euo pipefail
cmd="${1:?start DIR PORT | stop DIR | halt DIR | run DIR PORT}"
dir="${2:?DIR}"
bindir="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)"
[ -x "$bindir/initdb" ] || { echo "postgres.sh: no PostgreSQL server installed" >&2; exit 1; }
as_server() {
  if [ "$(id -u)" = 0 ]; then setpriv --reuid=postgres --regid=postgres --clear-groups -- "$@"; else "$@"; fi
}
run_server() {
  as_server "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w \
    -o "-c listen_addresses=127.0.0.1 -p $1 -k $dir -c max_connections=300 -c fsync=off" start >/dev/null
}
halt_server() {
  if [ -d "$dir/data" ]; then as_server "$bindir/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null || true; fi
}
case "$cmd" in
  start)
    port="${3:?PORT}"
    mkdir -p "$dir"
    if [ "$(id -u)" = 0 ]; then chown postgres:postgres "$dir"; fi
    as_server "$bindir/initdb" -D "$dir/data" -U postgres --auth=trust -E UTF8 >"$dir/initdb.log"
    run_server "$port"
    echo "postgres://postgres@127.0.0.1:$port/postgres"
    ;;
  run) run_server "${3:?PORT}" ;;
  halt) halt_server ;;
  stop)
    halt_server
    rm -rf "$dir"
    ;;
  *) echo "postgres.sh: unknown command $cmd" >&2; exit 2 ;;
esac
