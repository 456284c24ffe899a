#!/usr/bin/env bash
# Builds the fuzz targets and runs each for SECONDS (default 60), one after
# the other, on the stable toolchain: cargo-fuzz needs nightly only for its
# default AddressSanitizer (`-Zsanitizer`), so the targets are built with
# `-s none` (safe Rust; libFuzzer's coverage instrumentation and
# `--cfg fuzzing` are stable `-C` flags) and with debug assertions and
# overflow checks on (`-a`). Seeds come from `seed.rs`. Exits non-zero on
# the first crash; the input is left in fuzz/artifacts/TARGET/.
#
#   fuzz/run.sh 60            # every target, 60 s each
#   fuzz/run.sh 600 open      # one target
set -euo pipefail
cd "$(dirname "$0")"

seconds=${1:-60}
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    targets=(open seal_open_roundtrip esp_open ssh_open batch_open suite_lookup)
fi

if ! cargo fuzz --version >/dev/null 2>&1; then
    cargo install cargo-fuzz --version 0.13.2 --locked
fi

flags=(-s none -O -a)
cargo fuzz build "${flags[@]}"
cargo run --quiet --release --example seed -- corpus

for t in "${targets[@]}"; do
    echo "== fuzz $t for ${seconds}s"
    log=$(mktemp)
    status=0
    # The largest record is 106 header bytes + 2^14 + 2048; the seal target
    # also tries plaintexts over 2^14.
    cargo fuzz run "${flags[@]}" "$t" "corpus/$t" -- \
        -max_total_time="$seconds" -max_len=20000 -print_final_stats=1 \
        >"$log" 2>&1 || status=$?
    grep -E '^#[0-9]+[[:space:]]+(INITED|DONE)|^stat::(number_of_executed_units|average_exec_per_sec|new_units_added)' "$log" || true
    if [ $status -ne 0 ]; then
        tail -n 60 "$log"
        echo "fuzz target $t FAILED (exit $status)"
        rm -f "$log"
        exit $status
    fi
    rm -f "$log"
done
echo "fuzz: ${#targets[@]} passed, 0 failed"
