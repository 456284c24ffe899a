#!/usr/bin/env bash
# Regenerates docs/results/RESULTS.md (machine, headline table at 16 KiB and
# 64 B, cbc-hmac against OpenSSL) and docs/results/throughput.svg (throughput
# against payload size, 16 B to 16 KiB) with one run of cbc-hmac-bench.
#
#   bench/results.sh                 # 1 s per side per figure: about 4 minutes
#   bench/results.sh --seconds 0.3   # extra options go to cbc-hmac-bench
#
# Needs the system OpenSSL (libssl-dev and pkg-config on Debian/Ubuntu).
# Measure on a quiet machine where possible: the page records the load
# average and the CPU share the measuring thread got.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p docs/results
exec cargo run --release -p cbc-hmac-bench --features openssl -- \
    --compare openssl --sweep \
    --plot docs/results/throughput.svg \
    --markdown docs/results/RESULTS.md \
    "$@"
