#!/bin/sh
# Runs a libFuzzer binary for a bounded time over a scratch copy of its seed corpus, so new
# inputs never land in the repository. Exits nonzero on any finding; the reproducer is left
# under <artifact dir>.
# Usage: run_fuzzer.sh <fuzzer> <corpus dir> <artifact dir> <seconds> [dictionary]
set -eu
fuzzer=$1 corpus=$2 artifacts=$3 seconds=$4 dict=${5:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/corpus" "$artifacts"
cp -R "$corpus"/. "$work/corpus"/
# libFuzzer exits 77 on a finding by default, which meson reads as "skipped": make it 1.
set -- -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
  -error_exitcode=1 -timeout_exitcode=1 \
  -artifact_prefix="$artifacts/$(basename "$fuzzer")-"
if [ -n "$dict" ]; then set -- "$@" -dict="$dict"; fi
"$fuzzer" "$@" "$work/corpus"
