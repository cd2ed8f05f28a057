#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for the PostgreSQL store tests (tests/pg_store_test.cpp); the
# ctest fixture `pg_cluster` (tests/CMakeLists.txt) runs `start` before them and `stop` after.
#
# usage: scripts/pg_test_cluster.sh start|stop DIR [PORT]
#   start  initdb + pg_ctl start in DIR/data, unix socket in DIR (no TCP), superuser `memhealth`,
#          trust authentication for local connections only. Writes DIR/conninfo (a libpq URI)
#          when the server is up. When no server can be started (no initdb, initdb refused),
#          writes the reason to DIR/unavailable and exits 0: the tests then skip, unless
#          MEMHEALTH_REQUIRE_PG=1 (CI), which makes this an error (exit 1).
#   stop   pg_ctl stop -m immediate, then removes DIR/data.
# As root (CI), initdb refuses to run: the server runs as the `postgres` user (runuser), which
# the postgresql package creates, in a directory it owns.
set -euo pipefail
cmd="${1:-}"
dir="${2:-}"
port="${3:-5432}"
if [ -z "$cmd" ] || [ -z "$dir" ]; then
  sed -n '2,13p' "$0"
  exit 2
fi
dir="$(mkdir -p "$dir" && cd "$dir" && pwd)"
data="$dir/data"

bin=""
for d in /usr/lib/postgresql/*/bin; do
  [ -x "$d/initdb" ] && bin="$d"
done
if [ -z "$bin" ] && command -v initdb >/dev/null 2>&1; then bin="$(dirname "$(command -v initdb)")"; fi

as_server() {  # runs a server command as the server's user
  if [ "$(id -u)" -eq 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

unavailable() {
  echo "$1" >"$dir/unavailable"
  echo "pg_test_cluster.sh: $1" >&2
  if [ "${MEMHEALTH_REQUIRE_PG:-0}" = "1" ]; then
    echo "pg_test_cluster.sh: MEMHEALTH_REQUIRE_PG=1: the PostgreSQL tests must run" >&2
    exit 1
  fi
  exit 0
}

case "$cmd" in
  start)
    rm -f "$dir/conninfo" "$dir/unavailable"
    [ -n "$bin" ] || unavailable "no initdb found (install postgresql, e.g. apt-get install postgresql-15)"
    if [ -f "$data/postmaster.pid" ]; then  # a cluster left by an interrupted run
      as_server "$bin/pg_ctl" -D "$data" -m immediate stop >/dev/null 2>&1 || true
    fi
    rm -rf "$data"
    if [ "$(id -u)" -eq 0 ]; then
      getent passwd postgres >/dev/null || unavailable "running as root and there is no 'postgres' user to run the server"
      chown postgres "$dir"
    fi
    as_server "$bin/initdb" -D "$data" -U memhealth --auth=trust --no-sync -E UTF8 --locale=C \
      >"$dir/initdb.log" 2>&1 || unavailable "initdb failed (see $dir/initdb.log)"
    as_server "$bin/pg_ctl" -D "$data" -l "$dir/server.log" -w -t 30 \
      -o "-c listen_addresses='' -c unix_socket_directories='$dir' -p $port -c fsync=off -c full_page_writes=off" \
      start >/dev/null || unavailable "the server did not start (see $dir/server.log)"
    echo "postgresql:///postgres?host=$dir&port=$port&user=memhealth" >"$dir/conninfo"
    echo "pg_test_cluster.sh: server up, socket in $dir, port $port"
    ;;
  stop)
    if [ -n "$bin" ] && [ -f "$data/postmaster.pid" ]; then
      as_server "$bin/pg_ctl" -D "$data" -m immediate -w stop >/dev/null 2>&1 || true
    fi
    rm -rf "$data" "$dir/conninfo"
    ;;
  *)
    echo "pg_test_cluster.sh: unknown command '$cmd' (start or stop)" >&2
    exit 2
    ;;
esac
