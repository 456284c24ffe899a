#!/usr/bin/env bash
# Checks the per-CPU kernel table (src/backends/cpu.rs) on this machine: runs
# cbc-hmac-bench against OpenSSL under each row of the table, as chosen with
# CBC_HMAC_TUNING_CPU, and prints each figure's median ratio per row. Rows
# that choose the same kernels here are measured once. The runs alternate,
# their order reversed every other run, so a trend in the machine's load
# falls on every row alike. Column A is this CPU's own row: a column that
# beats it in every run is a reason to measure again, and then to change the
# table.
#
#   bench/tuning.sh                       # 5 runs: AES-256-CBC-SHA384 at 16 KiB, 1 KiB, 256 B
#   bench/tuning.sh --runs 9 --combination AES-128-CBC-SHA1 --payload 16384
#
# Options: --runs N (default 5), --combination NAME (default
# AES-256-CBC-SHA384), --payload LIST (default 16384,1024,256), --seconds S
# per figure and side (default 0.3). Needs the system OpenSSL (libssl-dev and
# pkg-config on Debian/Ubuntu).
#
# On Intel, an AMD row's SHA-1 and SHA-256 opens decrypt on VAES-512 beside
# SHA-NI rounds in legacy SSE encoding, which Intel cores run many times
# slower (AMD's are unaffected): their figures there say nothing about AMD.
set -euo pipefail
cd "$(dirname "$0")/.."

runs=5
combination=AES-256-CBC-SHA384
payload=16384,1024,256
seconds=0.3
while [ $# -gt 0 ]; do
    case "$1" in
    --runs | --combination | --payload | --seconds)
        [ $# -ge 2 ] || { echo "tuning.sh: $1 needs a value" >&2; exit 2; }
        case "$1" in
        --runs) runs=$2 ;;
        --combination) combination=$2 ;;
        --payload) payload=$2 ;;
        --seconds) seconds=$2 ;;
        esac
        shift 2
        ;;
    *)
        echo "tuning.sh: unknown option $1 (see the comment at the top of $0)" >&2
        exit 2
        ;;
    esac
done
if ! [[ $runs =~ ^[0-9]+$ ]] || ((10#$runs == 0)); then
    echo "tuning.sh: --runs wants a positive integer" >&2
    exit 2
fi
runs=$((10#$runs))

cargo build --quiet --release -p cbc-hmac-bench --features openssl
bin=target/release/cbc-hmac-bench

# One CPU per row of the table (as in .ci/run, with Zen 1 besides); "" is
# this CPU's own row.
rows=("" AuthenticAMD:0x17:0x1 AuthenticAMD:0x17:0x31 AuthenticAMD:0x19:0x1 AuthenticAMD:0x19:0x11
    AuthenticAMD:0x1a:0x2 GenuineIntel:0x6:0x8f GenuineIntel:0x6:0xa7
    GenuineIntel:0x6:0xcf HygonGenuine:0x18:0x1)

# What each row runs here: the benchmark's backend and kernel lines.
describe() {
    CBC_HMAC_TUNING_CPU=$1 "$bin" --combination "$combination" --payload 16 \
        --seconds 0.001 --rounds 1 | grep -E '^(Backend|Hash kernels):'
}

configs=() # the first row of each distinct configuration
members=() # the rows that choose as it does
kernels=() # what it runs
for row in "${rows[@]}"; do
    what=$(describe "$row")
    name=${row:-this CPU}
    found=
    for i in "${!configs[@]}"; do
        if [ "${kernels[$i]}" = "$what" ]; then found=$i; break; fi
    done
    if [ -n "$found" ]; then
        members[found]+=", $name"
    else
        configs+=("$row")
        members+=("$name")
        kernels+=("$what")
    fi
done

letters=(A B C D E F G H I J)
echo "CPU: $("$bin" --payload 16 --seconds 0.001 --rounds 1 | sed -n 's/^CPU: //p')"
echo "Configurations ($runs runs each, $seconds s per figure and side, alternating):"
for i in "${!configs[@]}"; do
    echo "  ${letters[$i]}: ${members[$i]}"
    sed 's/^/       /' <<<"${kernels[$i]}"
done

log=$(mktemp)
trap 'rm -f "$log"' EXIT
n=${#configs[@]}
for ((run = 1; run <= runs; run++)); do
    for ((k = 0; k < n; k++)); do
        if ((run % 2)); then i=$k; else i=$((n - 1 - k)); fi
        echo "run $run: ${letters[$i]}" >&2
        CBC_HMAC_TUNING_CPU=${configs[$i]} "$bin" --compare openssl \
            --combination "$combination" --payload "$payload" \
            --seconds "$seconds" --rounds 4 |
            awk -v cfg="$i" '
                /payload size:/ { size = $NF; mac = /^Checking MAC/ }
                / ratio / && /GB\/sec/ {
                    label = $0
                    sub(/^ +/, "", label)
                    sub(/ +[0-9.]+ GB\/sec.*/, "", label)
                    if (mac) label = "HMAC-" label
                    for (f = 1; f <= NF; f++) if ($f == "ratio") r = $(f + 1)
                    print cfg "\t" size " B " label "\t" r
                }' >>"$log"
    done
done

echo
echo "Median ratio against OpenSSL (above 1: cbc-hmac faster), per configuration:"
awk -F'\t' -v n="$n" -v letters="${letters[*]}" '
    BEGIN { split(letters, L, " ") }
    {
        if (!($2 in seen)) { seen[$2] = 1; order[++figures] = $2 }
        k = $1 SUBSEP $2
        v[k, ++count[k]] = $3
    }
    function median(k,    m, i, j, t, a) {
        m = count[k]
        for (i = 1; i <= m; i++) a[i] = v[k, i]
        for (i = 2; i <= m; i++)
            for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; j--) {
                t = a[j]; a[j] = a[j - 1]; a[j - 1] = t
            }
        return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
    }
    END {
        printf "%-40s", "figure"
        for (c = 0; c < n; c++) printf "%7s", L[c + 1]
        print ""
        for (f = 1; f <= figures; f++) {
            printf "%-40s", order[f]
            for (c = 0; c < n; c++) printf "%7.3f", median(c SUBSEP order[f])
            print ""
        }
    }' "$log"
