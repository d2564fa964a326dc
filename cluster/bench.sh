#!/usr/bin/env bash
# Cost of the cluster on one machine: crawls a site through the API of node n1 of an N-node
# cluster started by local.sh, and prints the pages, wall time, the CPU seconds of all
# nodes together, CPU per page, and the requests and bytes sent between nodes.
#
#   cluster/bench.sh N URL [LIMIT]     e.g. cluster/bench.sh 3 http://127.0.0.1:8080/ 100000
#
# The site must already be served (e.g. the crawl benchmark site with
# ../shared/bench/crawl/site/serve.sh SITE 8080). Uses NODE_BIN (default
# target/release/ferrocrawl) and a fresh CLUSTER_DIR each run. Prints one line:
# nodes=N pages=P wall_s=W cpu_s=C cpu_ms_per_page=X cpu_s_by_node=C1,C2,..
# minor_faults_per_page=F calls=K messages=M bytes_out=B bytes_in=B
# (calls: requests between nodes; messages: what carried them, batches and collections)
# With THREADS=1 a second line gives each node's CPU seconds in the crawl by kind of thread
# (threads named alike summed, a trailing number dropped): threads=n1:tokio-rt-worker=3.21,..
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:?usage: cluster/bench.sh N URL [LIMIT]}
url=${2:?usage: cluster/bench.sh N URL [LIMIT]}
limit=${3:-100000}
dir=$(mktemp -d)
export CLUSTER_DIR=$dir DETACH=1 API_PORT=${API_PORT:-3301} CLUSTER_PORT=${CLUSTER_PORT:-4901}
export FERROCRAWL_SECURITY__ALLOW_PRIVATE_TARGETS=true FERROCRAWL_LOG__LEVEL=warn
trap 'cluster/local.sh stop >/dev/null 2>&1; rm -rf "$dir"' EXIT
cluster/local.sh "$n" >/dev/null
key=$(cat "$dir/api-key")
api="http://127.0.0.1:$API_PORT"
auth=(-H "Authorization: Bearer $key")
for _ in $(seq 200); do
  live=$(curl -sf "${auth[@]}" "$api/v2/cluster" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["live"]))' 2>/dev/null || echo 0)
  [[ $live == "$n" ]] && break
  sleep 0.1
done
pids=$(cat "$dir"/n*/pid)
cpu() { for p in $pids; do awk '{print $14+$15}' "/proc/$p/stat"; done | awk -v hz="$(getconf CLK_TCK)" '{s+=$1} END {printf "%.2f", s/hz}'; }
ticks() { for p in $pids; do awk '{printf "%d ", $14+$15}' "/proc/$p/stat"; done; }
faults() { for p in $pids; do awk '{s+=$10} END {printf "%d ", s}' "/proc/$p/stat"; done; }
# Each thread's CPU ticks, as "node tid name ticks" lines (THREADS=1).
threads() {
  [[ ${THREADS:-0} == 1 ]] || return 0
  python3 - $pids <<'PY'
import glob, sys
for i, pid in enumerate(sys.argv[1:], 1):
    for stat in glob.glob(f"/proc/{pid}/task/*/stat"):
        try:
            s = open(stat).read()
        except OSError:
            continue
        r = s[s.rindex(")") + 2:].split()
        name = s[s.index("(") + 1:s.rindex(")")].replace(" ", "_")
        print(f"n{i}", stat.split("/")[4], name, int(r[11]) + int(r[12]))
PY
}
threads >"$dir/threads-before"
before=$(cpu); before_each=$(ticks); faults_before=$(faults)
start=$(date +%s.%N)
id=$(curl -sf "${auth[@]}" -H 'content-type: application/json' \
  -d "{\"url\":\"$url\",\"limit\":$limit,\"crawlEntireDomain\":true,\"maxConcurrency\":32,\"scrapeOptions\":{\"maxAge\":0,\"storeInCache\":false}}" \
  "$api/v2/crawl" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
# Polled with curl and grep only: a python start per poll took about a tenth of this
# machine beside the nodes it measures.
while :; do
  body=$(curl -sf "${auth[@]}" "$api/v2/crawl/$id?limit=1")
  state=$(grep -o '"status":"[a-z]*"' <<<"$body" | head -1 | cut -d'"' -f4)
  pages=$(grep -o '"completed":[0-9]*' <<<"$body" | head -1 | cut -d: -f2)
  [[ -n $state && $state != scraping ]] && break
  sleep 0.2
done
end=$(date +%s.%N)
after=$(cpu); after_each=$(ticks); faults_after=$(faults)
threads >"$dir/threads-after"
traffic=$(for i in $(seq 1 "$n"); do curl -sf "${auth[@]}" "http://127.0.0.1:$((API_PORT + i - 1))/v2/cluster"; echo; done |
  python3 -c 'import json,sys
c=m=bo=bi=0
for line in sys.stdin:
    line=line.strip()
    if not line: continue
    t=json.loads(line).get("traffic") or {}
    k=t.get("calls",0); c+=k; m+=t.get("messages",k); bo+=t.get("bytesOut",0); bi+=t.get("bytesIn",0)
print(f"calls={c} messages={m} bytes_out={bo} bytes_in={bi}")')
python3 - "$n" "$pages" "$start" "$end" "$before" "$after" "$traffic" "$before_each" "$after_each" "$(getconf CLK_TCK)" "$faults_before" "$faults_after" <<'PY'
import sys
n, pages, start, end, before, after, traffic, before_each, after_each, hz, f_before, f_after = sys.argv[1:]
each = ",".join(f"{(int(b) - int(a)) / int(hz):.2f}" for a, b in zip(before_each.split(), after_each.split()))
faults = sum(int(b) - int(a) for a, b in zip(f_before.split(), f_after.split()))
pages = int(pages); wall = float(end) - float(start); cpu = float(after) - float(before)
print(f"nodes={n} pages={pages} wall_s={wall:.2f} pages_per_s={pages / wall:.0f} cpu_s={cpu:.2f} "
      f"cpu_ms_per_page={1000 * cpu / max(pages, 1):.3f} cpu_s_by_node={each} "
      f"minor_faults_per_page={faults / max(pages, 1):.1f} {traffic}")
PY
if [[ ${THREADS:-0} == 1 ]]; then
  python3 - "$dir/threads-before" "$dir/threads-after" "$(getconf CLK_TCK)" <<'PY'
import collections, re, sys
def read(path):
    out = {}
    for line in open(path):
        node, tid, name, ticks = line.split()
        out[(node, tid)] = (name, int(ticks))
    return out
before, after, hz = read(sys.argv[1]), read(sys.argv[2]), int(sys.argv[3])
kinds = collections.Counter()
for key, (name, ticks) in after.items():
    kinds[(key[0], re.sub(r"[-_]?\d+$", "", name))] += ticks - before.get(key, (name, 0))[1]
print("threads=" + ",".join(f"{node}:{name}={t / hz:.2f}" for (node, name), t in sorted(kinds.items()) if t))
PY
fi
