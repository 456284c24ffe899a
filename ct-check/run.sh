#!/usr/bin/env bash
# The constant-time check: builds ct-check (release, with debug info) and
# runs it under valgrind memcheck for every backend valgrind's virtual CPU
# can run, twice: as built by default (the RustCrypto crates behind the
# portable backend pick AES-NI themselves) and with those crates forced to
# their software implementations. Then `ct-check analyze` fails on any
# memcheck report except at the library's declassification sites.
#
#   ct-check/run.sh                       # everything
#   CT_CHECK_VARIANTS=default ct-check/run.sh
#   CT_CHECK_TRACK_ORIGINS=1 ct-check/run.sh   # say where a value came from
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v valgrind >/dev/null 2>&1; then
    echo "ct-check: valgrind is not installed (apt-get install valgrind)" >&2
    exit 2
fi
valgrind --version

out=target/ct-check/reports
rm -rf "$out"
mkdir -p "$out"
soft='--cfg aes_backend="soft" --cfg sha1_backend="soft" --cfg sha2_backend="soft"'
variants=${CT_CHECK_VARIANTS:-default soft}
vg=(valgrind --tool=memcheck --error-limit=no --fullpath-after= --read-inline-info=yes)
if [ "${CT_CHECK_TRACK_ORIGINS:-0}" = 1 ]; then
    vg+=(--track-origins=yes)
fi

reports=()
covered=()
failed=0
for variant in $variants; do
    case $variant in
        default) flags= ;;
        soft) flags=$soft ;;
        *) echo "unknown variant $variant" >&2; exit 2 ;;
    esac
    dir=target/ct-check/$variant
    echo "== build ($variant${flags:+: RUSTFLAGS=$flags})"
    RUSTFLAGS="$flags" CARGO_PROFILE_RELEASE_DEBUG=true \
        cargo build --release -p ct-check --target-dir "$dir"
    bin=$dir/release/ct-check

    "$bin" list >"$out/$variant-native.txt"
    valgrind -q "$bin" list >"$out/$variant-valgrind.txt"
    while read -r name native features; do
        under=$(awk -v n="$name" '$1 == n { print $2 }' "$out/$variant-valgrind.txt")
        if [ "$under" = yes ]; then
            echo "== $variant / $name under valgrind"
            xml=$out/$variant-$name.xml
            status=0
            "${vg[@]}" --xml=yes --xml-file="$xml" --log-file="$out/$variant-$name.log" \
                "$bin" run "$name" || status=$?
            if [ $status -ne 0 ]; then
                # A wrong answer; its memcheck report is still analysed.
                echo "ct-check: $variant / $name FAILED with exit $status (see $out/$variant-$name.log)"
                failed=1
            fi
            reports+=("$xml")
            covered+=("$name ($variant)")
        elif [ "$native" = yes ]; then
            echo "not covered: $name ($variant): needs $features, which valgrind's virtual CPU does not offer"
        else
            echo "not covered: $name ($variant): this CPU lacks $features"
        fi
    done <"$out/$variant-native.txt"
done

echo "== analysis"
echo "covered: ${covered[*]}"
# The analyser of the last build resolves the sites against its sources.
status=0
"$bin" analyze "${reports[@]}" || status=$?
if [ $failed -ne 0 ] || [ $status -ne 0 ]; then
    echo "ct-check: FAILED"
    exit 1
fi
echo "ct-check: passed"
