#!/usr/bin/env bash
# Search benchmarks (issue: search), on the crawl benchmark's generated site.
#
#   benches/search/run.sh cost [PAIRS]       # indexing on against off, interleaved pairs
#   benches/search/run.sh index [PAGES]      # a PAGES-page index (default 100000): size,
#                                            # query latency and rate, relevance
#   DATA_DIR=D benches/search/run.sh queries [PAGES]  # the queries again on D's index
#
# `cost` crawls a 10 000-page site through the API (pages stored, so indexed) with the
# index on and off (search.index), and prints pages/s of the crawl and the server's CPU
# per page including the indexer's work until it has written every page. `index` crawls a
# PAGES-page site into a fresh data directory, waits for the indexer, prints the index's
# size per page, then runs the query client (benches/search/client.rs): latency p50/p99
# and queries/s of 1-word, 3-word, phrase and operator queries, and known-item relevance.
# Needs nginx (nginx-light), python3 and ../shared/bench/crawl. Uses target/release/ferrocrawl
# and cargo bench for the client.
set -euo pipefail
cd "$(dirname "$0")/../.."
what=${1:-cost}
bin=${NODE_BIN:-target/release/ferrocrawl}
site_gen=../shared/bench/crawl/site
work=$(mktemp -d)
port=${SITE_PORT:-8085}
api_port=${API_PORT:-3601}
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT

site() {
  local pages=$1 dir=$2
  [[ -f $dir/manifest.json ]] || python3 "$site_gen/gen_site.py" "$dir" -n "$pages" --base-url "http://127.0.0.1:$port" >/dev/null
  "$site_gen/serve.sh" "$dir" "$port" >"$work/nginx.out" 2>&1 &
  pids+=($!)
  for _ in $(seq 100); do curl -sf -o /dev/null "http://127.0.0.1:$port/robots.txt" && return; sleep 0.1; done
  cat "$work/nginx.out" >&2; exit 1
}

# Starts a server on a fresh data directory; sets $server_pid and $key.
serve() {
  local data=$1 index=$2
  [[ ${KEEP_DATA:-0} == 1 ]] || rm -rf "$data"
  mkdir -p "$data"
  FERROCRAWL_SECURITY__ALLOW_PRIVATE_TARGETS=true FERROCRAWL_LOG__LEVEL=warn FERROCRAWL_SEARCH__INDEX="$index" \
    FERROCRAWL_SEARCH__PROVIDERS="$([[ $index == true ]] && echo '["local"]' || echo '[]')" \
    FERROCRAWL_LIMITS__TEAM_CONCURRENCY=64 \
    "$bin" serve --port "$api_port" --data "$data" >"$data/out" 2>&1 &
  server_pid=$!
  pids+=("$server_pid")
  for _ in $(seq 200); do [[ -s $data/api-key ]] && curl -sf -o /dev/null "http://127.0.0.1:$api_port/health" && break; sleep 0.1; done
  key=$(cat "$data/api-key")
}

cpu_of() { awk -v hz="$(getconf CLK_TCK)" '{printf "%.2f", ($14+$15)/hz}' "/proc/$1/stat"; }

metric() { curl -sf "http://127.0.0.1:$api_port/metrics" | awk -v m="$1" '$1==m {print $2}' | head -1; }

# Crawls the site; prints "pages wall_s".
crawl() {
  local limit=$1
  local id start status
  start=$(date +%s.%N)
  id=$(curl -sf -H "Authorization: Bearer $key" -H 'content-type: application/json' \
    -d "{\"url\":\"http://127.0.0.1:$port/\",\"limit\":$limit,\"crawlEntireDomain\":true,\"maxConcurrency\":32}" \
    "http://127.0.0.1:$api_port/v2/crawl" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
  while :; do
    status=$(curl -sf -H "Authorization: Bearer $key" "http://127.0.0.1:$api_port/v2/crawl/$id?limit=1" |
      python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["status"], d["completed"])')
    [[ ${status%% *} != scraping ]] && break
    sleep 0.2
  done
  echo "${status##* } $(python3 -c "print(f'{$(date +%s.%N) - $start:.2f}')")"
}

# Waits until the indexer wrote `pages` pages (or nothing changes for 10 s).
drain() {
  local pages=$1 last=-1 same=0 now
  while :; do
    now=$(metric search_indexed_pages_total); now=${now:-0}
    [[ ${now%.*} -ge $pages ]] && return
    if [[ $now == "$last" ]]; then same=$((same + 1)); [[ $same -ge 50 ]] && return; else same=0; fi
    last=$now; sleep 0.2
  done
}

queries() {
  cargo bench --bench search -- --base "http://127.0.0.1:$api_port" --key "$key" --index "$data/search" \
    --site "$site_dir" --site-url "http://127.0.0.1:$port" --samples "${SAMPLES:-500}"
}

case $what in
cost)
  pairs=${2:-3}
  site 10000 "${SITE_DIR:-/tmp/search-site-10k}"
  echo "| run | index | pages | crawl wall s | pages/s | CPU s (crawl + indexing) | CPU ms per page | indexed | dropped |"
  echo "|---|---|---|---|---|---|---|---|---|"
  for i in $(seq "$pairs"); do
    for index in false true; do
      serve "$work/data" "$index"
      before=$(cpu_of "$server_pid")
      read -r pages wall < <(crawl 100000)
      [[ $index == true ]] && drain "$pages"
      after=$(cpu_of "$server_pid")
      indexed=$(metric search_indexed_pages_total); dropped=$(metric search_index_dropped_total)
      python3 -c "
pages, wall, cpu = $pages, $wall, $after - $before
print(f'| $i | $index | {pages} | {wall:.2f} | {pages / wall:.0f} | {cpu:.2f} | {1000 * cpu / pages:.3f} | ${indexed:-0} | ${dropped:-0} |')"
      kill "$server_pid"; wait "$server_pid" 2>/dev/null || true
    done
  done
  ;;
index)
  pages=${2:-100000}
  site_dir=${SITE_DIR:-/tmp/search-site-$pages}
  site "$pages" "$site_dir"
  data=${DATA_DIR:-$work/data}
  serve "$data" true
  read -r crawled wall < <(crawl "$pages")
  drain "$crawled"
  bytes=$(du -sb "$data/search" | cut -f1)
  indexed=$(metric search_indexed_pages_total); dropped=$(metric search_index_dropped_total)
  python3 -c "print(f'pages crawled={$crawled} in {$wall:.1f} s; indexed=${indexed:-0} dropped=${dropped:-0}; index {$bytes / 1e6:.1f} MB, {$bytes / $crawled / 1024:.2f} KiB per page (page + its images)')"
  queries
  ;;
queries)
  pages=${2:-100000}
  site_dir=${SITE_DIR:-/tmp/search-site-$pages}
  data=${DATA_DIR:?DATA_DIR names the data directory of an earlier index run}
  KEEP_DATA=1 serve "$data" true
  queries
  ;;
*) echo "usage: benches/search/run.sh cost [PAIRS] | index [PAGES] | queries [PAGES]" >&2; exit 2 ;;
esac
