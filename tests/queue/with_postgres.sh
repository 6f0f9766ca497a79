#!/bin/sh
# Runs a command against a PostgreSQL server of its own: initdb in a temporary folder, the server
# on loopback (a free port), KBV_TEST_POSTGRES_URL (postgresql://kbv@127.0.0.1:PORT/postgres) and
# KBV_TEST_POSTGRES_DATA / KBV_TEST_POSTGRES_CTL (for tests that restart the server) exported,
# then the server stopped and the folder removed, whatever the command did. The command's exit
# status is this script's.
# As root (CI), the server runs as the `postgres` user (or `nobody`): PostgreSQL refuses root.
# Exits 77 (CTest's skip code), saying why, when initdb or pg_ctl is not installed
# (scripts/setup.sh installs postgresql for the tests).
# KBV_PG_FSYNC=on keeps PostgreSQL's fsync (benchmarks); tests run without it (faster, and a
# restart of the server is a clean shutdown, so nothing committed is lost either way).
# Usage: tests/queue/with_postgres.sh COMMAND [ARGS...]
set -u
find_bin() {
  if command -v "$1" >/dev/null 2>&1; then command -v "$1"; return 0; fi
  for d in /usr/lib/postgresql/*/bin; do
    if [ -x "$d/$1" ]; then echo "$d/$1"; return 0; fi
  done
  return 1
}
INITDB=$(find_bin initdb) || { echo "with_postgres: skipped: initdb not found (install postgresql, see scripts/setup.sh)"; exit 77; }
PG_CTL=$(find_bin pg_ctl) || { echo "with_postgres: skipped: pg_ctl not found (install postgresql, see scripts/setup.sh)"; exit 77; }

DIR=$(mktemp -d /tmp/kbv-pg.XXXXXX) || exit 1
AS=""
if [ "$(id -u)" = 0 ]; then
  USER_NAME=postgres
  id "$USER_NAME" >/dev/null 2>&1 || USER_NAME=nobody
  chown "$USER_NAME" "$DIR"
  AS="runuser -u $USER_NAME --"
fi
cleanup() {
  $AS "$PG_CTL" -D "$DIR/data" -m immediate stop >/dev/null 2>&1
  rm -rf "$DIR"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if ! $AS "$INITDB" -D "$DIR/data" -U kbv --auth=trust -E UTF8 >"$DIR/initdb.log" 2>&1; then
  echo "with_postgres: initdb failed:"; cat "$DIR/initdb.log"; exit 1
fi
# A free port: try a few from a range that depends on this process.
started=""
for i in 0 1 2 3 4 5 6 7; do
  PORT=$(( 20000 + ( $$ * 7 + i * 1009 ) % 30000 ))
  if $AS "$PG_CTL" -D "$DIR/data" -l "$DIR/server.log" -w -t 60 \
       -o "-p $PORT -k $DIR -c listen_addresses=127.0.0.1 -c fsync=${KBV_PG_FSYNC:-off} -c max_connections=200" start >/dev/null 2>&1; then
    started=1; break
  fi
done
if [ -z "$started" ]; then
  echo "with_postgres: the server did not start:"; tail -20 "$DIR/server.log"; exit 1
fi
export KBV_TEST_POSTGRES_URL="postgresql://kbv@127.0.0.1:$PORT/postgres"
export KBV_TEST_POSTGRES_DATA="$DIR/data"
export KBV_TEST_POSTGRES_CTL="$AS $PG_CTL"
echo "with_postgres: PostgreSQL on $KBV_TEST_POSTGRES_URL (data in $DIR/data)"
"$@"
