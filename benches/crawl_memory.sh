#!/usr/bin/env bash
# Memory of one large crawl through the API: `ferrocrawl serve` on a fresh data directory,
# one `POST /v2/crawl` of LIMIT pages (Markdown kept in the store, as for any API crawl), its
# status polled every 5 s as an SDK's crawl() does (each poll reads a page of documents).
# Printed: pages done, wall seconds, the server's peak RSS (VmHWM) and RSS at the end, and
# the data directory's bytes on disk, in all, per page and by part (store, search index).
# With INDEX_WAIT=1 it then waits for the search index to catch up with the crawl (no page
# waiting, the indexed count still for 3 s) and prints when it did and the peak RSS by then.
#
#   benches/crawl_memory.sh [SITE_URL] [LIMIT] [BINARY]
#       (defaults: http://127.0.0.1:8080/, 100000, target/release/ferrocrawl)
#
# The site is the crawl benchmark's, e.g. gen_site.py -n 100000 served by serve.sh on 8080.
# Needs: curl, python3.
set -euo pipefail
cd "$(dirname "$0")/.."
site=${1:-http://127.0.0.1:8080/}
limit=${2:-100000}
bin=${3:-target/release/ferrocrawl}
work=$(mktemp -d)
trap 'kill -9 $server 2>/dev/null || true; rm -rf "$work"' EXIT
port=$((20000 + RANDOM % 10000))
FERROCRAWL_SECURITY__ALLOW_PRIVATE_TARGETS=true FERROCRAWL_LIMITS__TEAM_CONCURRENCY=64 \
  "$bin" serve --port "$port" --data "$work/data" >"$work/log" 2>&1 &
server=$!
for _ in $(seq 100); do curl -sf "localhost:$port/health" >/dev/null && break; sleep 0.1; done
key=$(cat "$work/data/api-key")
api() { curl -s -H "Authorization: Bearer $key" -H 'content-type: application/json' "$@"; }
t0=$(date +%s.%N)
id=$(api --data "{\"url\": \"$site\", \"limit\": $limit, \"scrapeOptions\": {\"formats\": [\"markdown\"]}}" \
  "localhost:$port/v2/crawl" | python3 -c 'import json, sys; print(json.load(sys.stdin)["id"])')
while true; do
  sleep 5
  state=$(api "localhost:$port/v2/crawl/$id" | python3 -c \
    'import json, sys; b = json.load(sys.stdin); print(b["status"], b["completed"], b["total"])')
  echo "$(date +%T) $state rss $(awk '/^VmRSS/ {print int($2 / 1024)}' "/proc/$server/status") MB" >&2
  [[ $state == scraping* ]] || break
done
t1=$(date +%s.%N)
peak=$(awk '/^VmHWM/ {print int($2 / 1024)}' "/proc/$server/status")
end=$(awk '/^VmRSS/ {print int($2 / 1024)}' "/proc/$server/status")
if [[ ${INDEX_WAIT:-} == 1 ]]; then
  last=-1 same=0
  while ((same < 3)); do
    read -r backlog indexed < <(curl -s "localhost:$port/metrics" |
      awk '/^search_index_backlog /{b=$2} /^search_indexed_pages_total /{i=$2} END{print b+0, i+0}')
    if [[ $backlog == 0 && $indexed == "$last" ]]; then same=$((same + 1)); else same=0; fi
    last=$indexed
    sleep 1
  done
  printf 'search index caught up %.1f s after the start (%s pages indexed); peak RSS by then %d MB\n' \
    "$(echo "$(date +%s.%N) - $t0 - 3" | bc)" "$indexed" "$(awk '/^VmHWM/ {print int($2 / 1024)}' "/proc/$server/status")"
fi
disk=$(du -sb "$work/data" | cut -f1)
parts=$(cd "$work/data" && du -sb -- * | awk '{printf "%s %d MB; ", $2, $1 / 1048576}')
read -r status done _ <<<"$state"
printf 'crawl %s: %s pages in %.1f s; peak RSS %d MB, at the end %d MB; data directory %d bytes (%d bytes per page)\n' \
  "$status" "$done" "$(echo "$t1 - $t0" | bc)" "$peak" "$end" "$disk" $((disk / (done > 0 ? done : 1)))
echo "on disk: $parts"
