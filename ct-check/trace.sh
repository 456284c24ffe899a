#!/usr/bin/env bash
# The trace-equality check on the real CPU (every backend it has, SHA-NI,
# AVX-512 and VAES included): builds ct-check (release, with debug info,
# in its own target dir) and runs `ct-check trace`, which single-steps one
# open or verify per input under ptrace and requires one trace (RIP and
# memory-operand addresses) per outcome within each class of inputs that
# differ only in secrets. See docs/SIDE-CHANNELS.md.
#
#   ct-check/trace.sh               # the CI matrix
#   ct-check/trace.sh --self-test   # planted leaks must be caught
#   ct-check/trace.sh --full        # the long matrix
#   ct-check/trace.sh --backend aesni -v    # one backend, every class
#   ct-check/trace.sh --only "esp open"     # the classes so named
#
# The last line is `ct-trace: PASSED (backends: ...)`, `ct-trace: self-test
# PASSED` or `ct-trace: FAILED ...`, and the exit status matches.
# CT_TRACE_JOBS=N sets how many tracers run at once (default 2, each
# pinned with its child to its own CPU).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(uname -sm)" != "Linux x86_64" ]; then
    echo "ct-trace: FAILED (needs x86-64 Linux, this is $(uname -sm))"
    exit 2
fi
if ! command -v addr2line >/dev/null 2>&1; then
    echo "ct-trace: FAILED (addr2line not found: apt-get install binutils)"
    exit 2
fi

dir=target/ct-trace
if ! CARGO_PROFILE_RELEASE_DEBUG=true cargo build --release -p ct-check --target-dir "$dir" >&2; then
    echo "ct-trace: FAILED (build)"
    exit 1
fi
exec "$dir/release/ct-check" trace "$@"
