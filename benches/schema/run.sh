#!/usr/bin/env bash
# Schema fuzzing: schemathesis against the served OpenAPI document, every operation, with a
# valid API key, checking for server errors (5xx) and responses that break their schema.
# The server and schemathesis run together in a fresh network namespace (only loopback is
# up there), so the random URLs in fuzzed bodies can never be fetched from a real network.
#
#   benches/schema/run.sh [EXAMPLES_PER_OPERATION]   (default 200; needs root for unshare)
#
# Installs schemathesis with pip when it is missing. Reports land in benches/.work/schema/.
# The answers that are by design (a language-model route on a server without one, a
# WebSocket-only address) are listed in benches/schema/schemathesis.toml.
set -euo pipefail
cd "$(dirname "$0")/../.."

examples="${1:-200}"
command -v st >/dev/null 2>&1 || pip install --quiet schemathesis
bin="${SERVER_BIN:-target/release/ferrocrawl}"
[ -x "$bin" ] || cargo build --release --quiet
work="benches/.work/schema"
rm -rf "$work" && mkdir -p "$work"

if [ "${SCHEMA_IN_NETNS:-}" != 1 ]; then
  exec unshare -n env SCHEMA_IN_NETNS=1 "$0" "$@"
fi
ip link set lo up

data="$(mktemp -d)"
trap 'kill "$server" 2>/dev/null; rm -rf "$data"' EXIT
# Private targets stay refused: a fuzzed URL naming loopback gets a 400, never a fetch.
"$bin" serve --port 3002 --data "$data" > "$work/server.log" 2>&1 &
server=$!
for _ in $(seq 100); do
  curl -fs http://127.0.0.1:3002/health >/dev/null 2>&1 && break
  sleep 0.1
done
key="$(cat "$data/api-key")"

status=0
st --config-file benches/schema/schemathesis.toml run http://127.0.0.1:3002/v2/openapi.json \
  -H "Authorization: Bearer $key" \
  --checks all \
  --max-examples "$examples" \
  --request-timeout 40 \
  --continue-on-failure \
  --report junit --report-junit-path "$work/junit.xml" \
  --report-ndjson-path "$work/events.ndjson" \
  2>&1 | tee "$work/schemathesis.txt" || status=$?
echo "server errors logged: $(grep -c ' 5[0-9][0-9] ' "$work/server.log" || true)"
exit "$status"
