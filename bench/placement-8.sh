#!/usr/bin/env bash
# OpenStack Placement 8.0.0 (Debian's placement-api) to run the bench beside, set up as
# the bench's cold and warm figures were measured against it: its own PostgreSQL (a private cluster in a temporary folder, on a
# unix socket only), uwsgi with 2 processes x 4 threads, noauth2, on a free loopback port.
#
#   bench/placement-8.sh start     # prints PLACEMENT_URL=... PLACEMENT_PIDS=... PLACEMENT_DIR=...
#   npm run bench -- --compare "$PLACEMENT_URL" --compare-name 'Placement 8.0.0' --compare-pids "$PLACEMENT_PIDS"
#   bench/placement-8.sh stop DIR  # stops uwsgi and PostgreSQL, removes DIR
#
# Needs placement-api, uwsgi, uwsgi-plugin-python3, postgresql and python3-psycopg2.
# PostgreSQL refuses to run as root: as root, the cluster runs as the `postgres` user.
set -euo pipefail

pg_bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
need() { echo "bench/placement-8.sh: $1 is not installed (Debian package $2)" >&2; exit 1; }
[ -x /usr/bin/placement-api ] || need placement-api placement-api
[ -x /usr/bin/uwsgi ] || need uwsgi uwsgi
[ -f /usr/lib/uwsgi/plugins/python3_plugin.so ] || need 'uwsgi python3 plugin' uwsgi-plugin-python3
[ -n "$pg_bin" ] && [ -x "$pg_bin/initdb" ] || need PostgreSQL postgresql
/usr/bin/python3 -c 'import psycopg2' 2>/dev/null || need psycopg2 python3-psycopg2

as_db_user() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

case "${1:-}" in
start)
  dir=$(mktemp -d /tmp/placement-8-XXXXXX)
  chmod 755 "$dir"
  mkdir "$dir/pg"
  [ "$(id -u)" = 0 ] && chown postgres "$dir/pg"
  as_db_user "$pg_bin/initdb" -D "$dir/pg/data" -U placement --auth=trust >"$dir/initdb.log"
  # No TCP: the socket in $dir/pg only.
  as_db_user "$pg_bin/pg_ctl" -D "$dir/pg/data" -l "$dir/pg/postgres.log" -w \
    -o "-c listen_addresses='' -c unix_socket_directories=$dir/pg -c fsync=on" start >/dev/null </dev/null
  as_db_user "$pg_bin/createdb" -h "$dir/pg" -U placement placement
  port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  cat >"$dir/placement.conf" <<EOF
[DEFAULT]
debug = false
[api]
auth_strategy = noauth2
[placement_database]
connection = postgresql+psycopg2://placement@/placement?host=$dir/pg
EOF
  OS_PLACEMENT_CONFIG_DIR=$dir placement-manage --config-file "$dir/placement.conf" db sync
  # Its own session, and none of this script's descriptors: `$(bench/placement-8.sh start)` returns.
  (cd "$dir" && OS_PLACEMENT_CONFIG_DIR=$dir exec setsid uwsgi --plugin python3 --http-socket "127.0.0.1:$port" \
    --add-header 'Connection: close' --wsgi-file /usr/bin/placement-api --master \
    --processes 2 --threads 4 --die-on-term --buffer-size 65535 --pidfile "$dir/uwsgi.pid") \
    >"$dir/uwsgi.log" 2>&1 </dev/null &
  for _ in $(seq 300); do
    curl -fsS "http://127.0.0.1:$port/" >/dev/null 2>&1 && break
    sleep 0.1
  done
  curl -fsS "http://127.0.0.1:$port/" >/dev/null || { tail -20 "$dir/uwsgi.log" >&2; exit 1; }
  master=$(cat "$dir/uwsgi.pid")
  pids=$(echo "$master" $(pgrep -P "$master") | tr ' ' ',')
  echo "PLACEMENT_URL=http://127.0.0.1:$port PLACEMENT_PIDS=$pids PLACEMENT_DIR=$dir"
  ;;
stop)
  dir=${2:?usage: bench/placement-8.sh stop DIR}
  [ -f "$dir/uwsgi.pid" ] && kill "$(cat "$dir/uwsgi.pid")" 2>/dev/null || true
  as_db_user "$pg_bin/pg_ctl" -D "$dir/pg/data" -m fast stop >/dev/null 2>&1 || true
  rm -rf "$dir"
  ;;
*)
  echo "usage: bench/placement-8.sh start | stop DIR" >&2
  exit 2
  ;;
esac
