#!/usr/bin/env bash
# Load test, loopback only, bounded in time: CLIENTS concurrent clients scrape for SECONDS
# (7 in 10 ask for one of 20 hot pages, cache hits once fetched; the rest for a URL never
# asked before, fetched from a local nginx) while 3 crawls (one site each) and a batch of
# 200 pages run. Prints requests/s, p50/p99 latency per kind, outcomes by status, the
# server's resident memory and open fds at start, peak and end, and whether every job
# finished with each page once.
#
#   benches/load/run.sh [CLIENTS] [SECONDS]     (default 200 clients, 180 s)
#   NODES=3 benches/load/run.sh ...             a cluster (cluster/local.sh) instead
#   NODES=3 FAULT=kill benches/load/run.sh ...  and its last node killed (-9) a third of
#                                               the way in, started again at two thirds
#   NODES=3 FAULT=freeze benches/load/run.sh ...  its last node frozen (SIGSTOP) a third of
#                                               the way in for FREEZE_S seconds (10)
#   NODES=3 FAULT=restart benches/load/run.sh ... its last node stopped (SIGTERM, as for an
#                                               upgrade) a third of the way in and started
#                                               again as soon as it has exited
#
# With NODES > 1 the clients, crawls and batch enter through every node but the last (as
# through a load balancer), whose node holds sites and teams like the others; memory and
# descriptors are summed over the nodes as they started (a restarted node is not counted).
#
# Needs nginx-light (the echo module for the sites' 20 ms latency) and the crawl
# benchmark's site generator (../shared/bench/crawl). The team limit is raised to 1 000
# pages in flight so the server, not the team's queue, is what is measured.
set -euo pipefail
cd "$(dirname "$0")/../.."
clients=${1:-200}; seconds=${2:-180}; pages=${PAGES:-300}; latency=${LATENCY_MS:-20}
bench=../shared/bench/crawl
command -v nginx >/dev/null || { echo "the sites need nginx: apt-get install nginx-light" >&2; exit 2; }
work=$(mktemp -d)
chmod 755 "$work"
pids=()
cleanup() { for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

# Sites 127.0.0.2-4 are crawled; 127.0.0.5 serves the scrapes and the batch.
for s in 2 3 4 5; do
  python3 "$bench/site/gen_site.py" "$work/site$s" -n "$pages" --base-url "http://127.0.0.$s:8095" >/dev/null
  BIND=127.0.0.$s "$bench/site/serve.sh" "$work/site$s" 8095 "$latency" >"$work/nginx$s.out" 2>&1 &
  pids+=($!)
done
for s in 2 3 4 5; do
  for _ in $(seq 50); do curl -sf -o /dev/null "http://127.0.0.$s:8095/robots.txt" && break; sleep 0.1; done
  curl -sf -o /dev/null "http://127.0.0.$s:8095/robots.txt" || { cat "$work/nginx$s.out" >&2; exit 1; }
done
reachable=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['reachable_pages'])" "$work/site2/manifest.json")

cargo build --release --quiet
cargo bench --bench load --no-run --quiet 2>/dev/null
export FERROCRAWL_SECURITY__ALLOW_PRIVATE_TARGETS=true FERROCRAWL_LOG__LEVEL=warn
export FERROCRAWL_LIMITS__TEAM_CONCURRENCY=1000
nodes=${NODES:-1}
entries=(); watched=()
if (( nodes == 1 )); then
  target/release/ferrocrawl serve --port 3450 --data "$work/data" >"$work/server.log" 2>&1 &
  pids+=($!)
  entries=(--base http://127.0.0.1:3450); watched=(--pid "$!")
  for _ in $(seq 100); do curl -sf -o /dev/null http://127.0.0.1:3450/health && break; sleep 0.1; done
  key=$(cat "$work/data/api-key")
else
  export CLUSTER_DIR=$work/cluster DETACH=1 API_PORT=3450 CLUSTER_PORT=4950
  trap 'cluster/local.sh stop >/dev/null 2>&1; cleanup' EXIT
  cluster/local.sh "$nodes" >/dev/null
  key=$(cat "$CLUSTER_DIR/api-key")
  for _ in $(seq 300); do
    live=$(curl -sf -H "Authorization: Bearer $key" http://127.0.0.1:3450/v2/cluster |
      python3 -c 'import json,sys; print(len(json.load(sys.stdin)["live"]))' 2>/dev/null || echo 0)
    [[ $live == "$nodes" ]] && break
    sleep 0.1
  done
  for i in $(seq 1 "$((nodes - 1))"); do entries+=(--base "http://127.0.0.1:$((3450 + i - 1))"); done
  for i in $(seq 1 "$nodes"); do watched+=(--pid "$(cat "$CLUSTER_DIR/n$i/pid")"); done
  if [[ ${FAULT:-} == kill ]]; then
    (
      sleep $((seconds / 3)); kill -KILL "$(cat "$CLUSTER_DIR/n$nodes/pid")"; rm -f "$CLUSTER_DIR/n$nodes/pid"
      echo "n$nodes killed at $((seconds / 3)) s" >&2
      sleep $((seconds / 3)); cluster/local.sh "$nodes" >/dev/null; echo "n$nodes started again" >&2
    ) &
  elif [[ ${FAULT:-} == restart ]]; then
    (
      sleep $((seconds / 3)); pid=$(cat "$CLUSTER_DIR/n$nodes/pid"); stopped=$(date +%s.%N)
      kill -TERM "$pid"
      while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
      echo "n$nodes stopped at $((seconds / 3)) s, exited after $(python3 -c "print(round($(date +%s.%N) - $stopped, 2))") s" >&2
      rm -f "$CLUSTER_DIR/n$nodes/pid"; cluster/local.sh "$nodes" >/dev/null; echo "n$nodes started again" >&2
    ) &
  elif [[ ${FAULT:-} == freeze ]]; then
    (
      sleep $((seconds / 3)); kill -STOP "$(cat "$CLUSTER_DIR/n$nodes/pid")"
      echo "n$nodes frozen at $((seconds / 3)) s" >&2
      sleep "${FREEZE_S:-10}"; kill -CONT "$(cat "$CLUSTER_DIR/n$nodes/pid")"; echo "n$nodes woken" >&2
    ) &
  fi
fi

echo "# load: $clients clients, ${seconds}s, $nodes node(s)${FAULT:+, fault $FAULT}, build $(git rev-parse --short HEAD), $(date -u +%F)"
cargo bench --bench load --quiet -- "${entries[@]}" --key "$key" "${watched[@]}" \
  --crawl http://127.0.0.2:8095/ --crawl http://127.0.0.3:8095/ --crawl http://127.0.0.4:8095/ \
  --batch-site http://127.0.0.5:8095 --scrape-site http://127.0.0.5:8095 \
  --clients "$clients" --seconds "$seconds" --pages "$reachable"
logs=("$work/server.log"); (( nodes == 1 )) || logs=("$CLUSTER_DIR"/n*/log)
echo "data directory after the run: $(du -sch "$work/data" "$work/cluster"/n*/data 2>/dev/null | tail -1 | cut -f1)"
echo "server log lines at warn or above: $(cat "${logs[@]}" | wc -l)"
grep -h -m5 -E "panicked|ERROR" "${logs[@]}" || true
