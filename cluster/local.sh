#!/usr/bin/env bash
# Starts N ferrocrawl nodes on loopback as one cluster, each with its own data directory,
# API port and cluster port, and stops them on Ctrl-C (or `cluster/local.sh stop`).
#
#   cluster/local.sh 3            # nodes n1..n3: API on 3101.., cluster port on 4701..
#   cluster/local.sh stop         # stop the nodes a previous run left in the background
#
# Environment: NODE_BIN (default target/release/ferrocrawl, built when missing), NODE_BINS
# (a binary per node, space-separated, e.g. "new old new" for a cluster being upgraded one
# node at a time; nodes beyond the list use NODE_BIN),
# CLUSTER_IPS (the address of each node's cluster port, space-separated, default 127.0.0.1
# for all; e.g. "127.0.1.1 127.0.1.2 127.0.1.3": a node's connections to the others then
# leave from its own address, which chaos.sh's network cut needs), CLUSTER_DIR (default ./cluster-data), CLUSTER_SECRET (default: generated and kept in
# CLUSTER_DIR/secret), API_PORT (3101), CLUSTER_PORT (4701), DETACH=1 (return at once and
# leave the nodes running; stop them with `local.sh stop`).
# Every node gets the same API key (printed), so the SDKs can use any node.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${CLUSTER_DIR:-cluster-data}
bin=${NODE_BIN:-target/release/ferrocrawl}
read -r -a bins <<<"${NODE_BINS:-}"
read -r -a ips <<<"${CLUSTER_IPS:-}"

# Stops the nodes and waits for them to exit (10 s, then SIGKILL and up to 5 s more), so
# that their ports are free when this returns.
stop_all() {
  local pids=()
  for pidfile in "$dir"/n*/pid; do
    [[ -f $pidfile ]] || continue
    pids+=("$(cat "$pidfile")")
    kill -TERM "${pids[-1]}" 2>/dev/null || true
    rm -f "$pidfile"
  done
  exited 100 "${pids[@]}" && return
  echo "nodes still running 10 s after SIGTERM: killing them" >&2
  for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  exited 50 "${pids[@]}" || true
}

# Whether the processes $2.. exit within $1 tenths of a second.
exited() {
  local tries=$1; shift
  for _ in $(seq "$tries"); do
    local alive=0
    for pid in "$@"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    [[ $alive == 0 ]] && return 0
    sleep 0.1
  done
  return 1
}

if [[ ${1:-} == stop ]]; then
  stop_all
  exit 0
fi
n=${1:?usage: cluster/local.sh N | stop}
[[ $n =~ ^[0-9]+$ && $n -ge 1 ]] || { echo "N must be a positive number" >&2; exit 2; }
[[ -x $bin ]] || cargo build --release
mkdir -p "$dir"
secret_file="$dir/secret"
if [[ -n ${CLUSTER_SECRET:-} ]]; then
  printf '%s\n' "$CLUSTER_SECRET" >"$secret_file"
elif [[ ! -f $secret_file ]]; then
  head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$secret_file"
fi
chmod 600 "$secret_file"
key_file="$dir/api-key"
[[ -f $key_file ]] || printf 'fc-%s\n' "$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')" >"$key_file"
key=$(cat "$key_file")

api=${API_PORT:-3101}; port=${CLUSTER_PORT:-4701}
seed="${ips[0]:-127.0.0.1}:$port"
for i in $(seq 1 "$n"); do
  node="$dir/n$i"
  mkdir -p "$node"
  [[ -f $node/pid ]] && kill -0 "$(cat "$node/pid")" 2>/dev/null && { echo "n$i is already running" >&2; continue; }
  node_bin=${bins[$((i - 1))]:-$bin}
  "$node_bin" keys create --team default --key "$key" --data "$node/data" >/dev/null 2>&1 || true
  join=(); [[ $i -gt 1 ]] && join=(--join "$seed")
  listen="${ips[$((i - 1))]:-127.0.0.1}:$((port + i - 1))"
  FERROCRAWL_CLUSTER__NODE_NAME="n$i" FERROCRAWL_CLUSTER__SECRET_FILE="$secret_file" \
    "$node_bin" serve --port $((api + i - 1)) --data "$node/data" \
      --cluster-listen "$listen" "${join[@]}" >>"$node/log" 2>&1 &
  echo $! >"$node/pid"
  echo "n$i: API http://127.0.0.1:$((api + i - 1)), cluster $listen, log $node/log"
done
echo "API key (every node): $key"
echo "cluster view: curl -s -H 'Authorization: Bearer $key' http://127.0.0.1:$api/v2/cluster"
if [[ ${DETACH:-0} == 1 ]]; then
  exit 0
fi
trap stop_all INT TERM
echo "Ctrl-C stops the nodes"
wait
