#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for the PostgreSQL store tests (tests/pg_store_test.cpp); the
# ctest fixture `pg_cluster` (tests/CMakeLists.txt) runs `start` before them and `stop` after.
#
# usage: scripts/pg_test_cluster.sh start|stop DIR [PORT]
#   start  initdb + pg_ctl start in a new temporary directory (mktemp under TMPDIR or /tmp, named
#          in DIR/serverdir: short socket paths, and reachable by the `postgres` user even when
#          DIR is under a private home), unix socket there (no TCP), superuser `memhealth`,
#          trust authentication for local connections only. Writes DIR/conninfo (a libpq URI)
#          when the server is up. When no server can be started (no initdb, initdb refused),
#          writes the reason to DIR/unavailable and exits 0: the tests then skip, unless
#          MEMHEALTH_REQUIRE_PG=1 (CI), which makes this an error (exit 1).
#   stop   pg_ctl stop -m immediate, then removes the server's directory.
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

stop_server() {  # stops the server named in DIR/serverdir (if any) and removes its directory
  local sdir
  sdir="$(cat "$dir/serverdir" 2>/dev/null || true)"
  case "$sdir" in
    */memhealth-pg.*) ;;
    *) rm -f "$dir/serverdir"; return 0 ;;  # nothing of ours
  esac
  if [ -n "$bin" ] && [ -f "$sdir/data/postmaster.pid" ]; then
    as_server "$bin/pg_ctl" -D "$sdir/data" -m immediate -w stop >/dev/null 2>&1 || true
  fi
  rm -rf "$sdir"
  rm -f "$dir/serverdir"
}

case "$cmd" in
  start)
    rm -f "$dir/conninfo" "$dir/unavailable"
    [ -n "$bin" ] || unavailable "no initdb found (install postgresql, e.g. apt-get install postgresql-15)"
    stop_server  # a cluster left by an interrupted run
    sdir="$(mktemp -d "${TMPDIR:-/tmp}/memhealth-pg.XXXXXX")"
    echo "$sdir" >"$dir/serverdir"
    if [ "$(id -u)" -eq 0 ]; then
      getent passwd postgres >/dev/null || unavailable "running as root and there is no 'postgres' user to run the server"
      chown postgres "$sdir"
    fi
    as_server "$bin/initdb" -D "$sdir/data" -U memhealth --auth=trust --no-sync -E UTF8 --locale=C \
      >"$dir/initdb.log" 2>&1 || unavailable "initdb failed (see $dir/initdb.log)"
    as_server "$bin/pg_ctl" -D "$sdir/data" -l "$sdir/server.log" -w -t 30 \
      -o "-c listen_addresses='' -c unix_socket_directories='$sdir' -p $port -c fsync=off -c full_page_writes=off" \
      start >/dev/null || { cp "$sdir/server.log" "$dir/server.log" 2>/dev/null || true; unavailable "the server did not start (see $dir/server.log)"; }
    echo "postgresql:///postgres?host=$sdir&port=$port&user=memhealth" >"$dir/conninfo"
    echo "pg_test_cluster.sh: server up, socket in $sdir, port $port"
    ;;
  stop)
    stop_server
    rm -f "$dir/conninfo"
    ;;
  *)
    echo "pg_test_cluster.sh: unknown command '$cmd' (start or stop)" >&2
    exit 2
    ;;
esac
