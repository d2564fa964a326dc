#!/usr/bin/env bash
# PDF text extraction beside pdftotext (poppler-utils) on the same files: wall time per file
# (median of RUNS whole-process runs) and word-level recall of ours against pdftotext's.
#
#   benches/documents.sh [DIR_WITH_PDFS]      (default: the generated samples plus any in /usr/share/doc)
#
# Needs: cargo build --release; apt-get install -y poppler-utils.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-7}
bin=target/release/ferrocrawl
work=$(mktemp -d)
if [[ $# -gt 0 ]]; then dir=$1; else
  dir=$work/samples
  cargo run -q --example document_samples -- "$dir" >/dev/null
  find /usr/share/doc -name '*.pdf' -size +50k 2>/dev/null | head -3 | xargs -r cp -t "$dir"
fi
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
timed() { # command... -> median wall seconds
  for _ in $(seq "$RUNS"); do /usr/bin/time -f %e "$@" >/dev/null 2>>"$work/t" || true; tail -1 "$work/t"; done | median
}
printf '%-40s %6s %10s %10s %8s\n' file pages ours_s pdftotext_s recall
for f in "$dir"/*.pdf; do
  pages=$(pdfinfo "$f" 2>/dev/null | awk '/^Pages:/ {print $2}')
  "$bin" parse "$f" >"$work/ours.md" 2>/dev/null
  pdftotext -enc UTF-8 "$f" "$work/theirs.txt"
  recall=$(python3 benches/word_recall.py "$work/ours.md" "$work/theirs.txt" | sed 's/ .*//; s/recall=//')
  printf '%-40s %6s %10s %10s %8s\n' "$(basename "$f")" "$pages" "$(timed "$bin" parse "$f")" "$(timed pdftotext "$f" -)" "$recall"
done
rm -rf "$work"
