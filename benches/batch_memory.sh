#!/usr/bin/env bash
# Memory of large batch submissions: `ferrocrawl serve` on a fresh data directory, then N
# batches of 100 000 URLs (a 4 MB body each) posted at once. The server's RSS is sampled
# every 20 ms; printed are its RSS before, the highest while the requests were answered and
# the highest over the 2 s after (the batches have started scraping by then).
#
#   benches/batch_memory.sh [N] [BINARY]     (default: 1, target/release/ferrocrawl)
#
# The URLs point at 127.0.0.1:8080 (the crawl benchmark's nginx, or nothing: a refused
# connection is a failed page, which costs less than a scraped one). Needs: curl, python3.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-1}
bin=${2:-target/release/ferrocrawl}
work=$(mktemp -d)
trap 'kill -9 $server 2>/dev/null || true; rm -rf "$work"' EXIT
python3 - "$work/body.json" <<'EOF'
import json, sys
urls = [f"http://127.0.0.1:8080/p/{i // 100}/page-{i}.html" for i in range(100_000)]
json.dump({"urls": urls, "formats": ["markdown"]}, open(sys.argv[1], "w"))
EOF
port=$((20000 + RANDOM % 10000))
FERROCRAWL_SECURITY__ALLOW_PRIVATE_TARGETS=true "$bin" serve --port "$port" --data "$work/data" \
  >"$work/log" 2>&1 &
server=$!
for _ in $(seq 100); do curl -sf "localhost:$port/health" >/dev/null && break; sleep 0.1; done
key=$(cat "$work/data/api-key")
sleep 1
rss() { awk '/^VmRSS/ {print $2}' "/proc/$server/status"; }
before=$(rss)
(while kill -0 "$server" 2>/dev/null; do echo "$(date +%s.%N) $(rss)"; sleep 0.02; done) >"$work/samples" &
sampler=$!
t0=$(date +%s.%N)
posts=()
for i in $(seq "$n"); do
  curl -s -o "$work/out.$i" -w '%{http_code}\n' -H "Authorization: Bearer $key" \
    -H 'content-type: application/json' --data-binary @"$work/body.json" \
    "localhost:$port/v2/batch/scrape" >"$work/code.$i" &
  posts+=($!)
done
wait "${posts[@]}"
t1=$(date +%s.%N)
sleep 2
kill "$sampler"
codes=$(cat "$work"/code.* | sort | uniq -c | tr -s ' ' | tr '\n' ' ')
answered=$(awk -v t1="$t1" '$1 <= t1 {print $2}' "$work/samples" | sort -n | tail -1)
after=$(awk '{print $2}' "$work/samples" | sort -n | tail -1)
printf 'batches=%s answers: %s\n' "$n" "$codes"
printf 'rss before %d MB; rise while answering %d MB; rise incl. 2 s of scraping %d MB; all answered in %.2f s\n' \
  $((before / 1024)) $(((answered - before) / 1024)) $(((after - before) / 1024)) "$(echo "$t1 - $t0" | bc)"
