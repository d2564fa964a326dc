#!/usr/bin/env bash
# Runs every fuzz target (or the ones named) for SECONDS each, one after another, with the
# bounds a page must keep: no panic, no input taking more than 1 s or 512 MiB.
#
#   fuzz/run.sh [SECONDS] [TARGET...]      (default 600 s, every target; needs nightly)
#
# Seeds come from the repository's own fixtures; new inputs collect in fuzz/corpus/, and a
# failing one lands in fuzz/artifacts/ with the command that reproduces it.
set -euo pipefail
cd "$(dirname "$0")"
seconds="${1:-600}"
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(extract_page robots sitemap scope charset)
command -v cargo-fuzz >/dev/null 2>&1 || cargo install cargo-fuzz

seed() {
  local target="$1" dir="corpus/$1"
  mkdir -p "$dir"
  [ -n "$(ls -A "$dir")" ] && return
  case "$target" in
    extract_page) find ../tests/fixtures/extract -name '*.html' | head -200 | while read -r f; do
        printf '\x01' | cat - "$f" > "$dir/$(basename "$f")"; done ;;
    robots) printf 'User-agent: *\nDisallow: /private/\nAllow: /private/ok$\nCrawl-delay: 2\nSitemap: https://example.com/s.xml\n' > "$dir/basic" ;;
    sitemap) printf '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>https://example.com/a</loc><lastmod>2024-01-01</lastmod></url></urlset>' > "$dir/urlset"
             printf '<sitemapindex><sitemap><loc>https://example.com/s1.xml.gz</loc></sitemap></sitemapindex>' > "$dir/index" ;;
    scope) printf '\x03https://example.com/docs/\n+^/docs/.*\n-/private\n/docs/a?b=1\nhttps://www.example.com/docs/x/../y\n//other.example.org/z\n' > "$dir/basic" ;;
    charset) printf 'text/html; charset=shift_jis\n<meta charset="euc-jp"><p>\x82\xa0</p>' > "$dir/basic" ;;
  esac
}

for target in "${targets[@]}"; do
  seed "$target"
  echo "== $target: ${seconds}s" >&2
  cargo +nightly fuzz build --fuzz-dir . --sanitizer none -O "$target" 2>/dev/null
  # CPU time of the run (user + system), which is what the bar counts.
  /usr/bin/time -f "cpu seconds: %U user + %S system" \
    cargo +nightly fuzz run --fuzz-dir . --sanitizer none -O "$target" "corpus/$target" -- \
    -max_total_time="$seconds" -timeout=1 -rss_limit_mb=512 -print_final_stats=1 2>&1 |
    tee "fuzz-$target.log" |
    grep -E "^(#[0-9]+ +DONE|Done|stat::number_of_executed_units|stat::peak_rss_mb|==[0-9]+==|SUMMARY|artifact_prefix|Test unit|cpu seconds)" || true
done
