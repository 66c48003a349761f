#!/bin/bash
# Sieve benchmark: `crawler sieve` against GNU sort -u (same memory cap), an
# order-preserving GNU pipeline, awk '!s[$0]++', an in-memory hash set of
# signatures (the upper bound) and cat (the read floor), on one deterministic
# corpus, in one run. Prints URLs/s, MB/s, peak RSS and the speed ratio to
# sort -u; checks that the sieve's output equals awk's byte for byte.
#
# usage: sieve.sh [N_URLS (default 20000000)] [CAP (e.g. 8M; default: one
#        tenth of the distinct URLs' signatures, 8 bytes each)]
#        sieve.sh --smoke           ~200k URLs, quick, still checks equality
#        sieve.sh --growth [CAP]    time per URL at 10M, 20M, 50M URLs, fixed cap
# Env: CRAWLER_BUILD (build dir), BENCH_TMP (scratch folder, default /tmp).
set -euo pipefail

BUILD=${CRAWLER_BUILD:-$(cd "$(dirname "$0")/../.." && pwd)/build}
CRAWLER=$BUILD/crawler/crawler
GEN=$BUILD/tests/bench/sieve/sieve_gen
HSET=$BUILD/tests/bench/sieve/sieve_hashset
TIME=/usr/bin/time
for b in "$CRAWLER" "$GEN" "$HSET" "$TIME"; do
    [ -x "$b" ] || { echo "sieve.sh: missing $b (build the targets crawler sieve_gen sieve_hashset; apt-get install time)" >&2; exit 1; }
done

MODE=full
N=20000000
CAP=
case "${1:-}" in
--smoke) MODE=smoke; N=200000 ;;
--growth) MODE=growth; CAP=${2:-} ;;
"") ;;
*) N=$1; CAP=${2:-} ;;
esac

T=$(mktemp -d "${BENCH_TMP:-/tmp}/sieve-bench.XXXXXX")
trap 'rm -rf "$T"' EXIT
export LC_ALL=C

to_bytes() {
    local v=$1 n=${1%[KkMmGg]}
    case "$v" in
    *[Kk]) echo $((n * 1024)) ;;
    *[Mm]) echo $((n * 1024 * 1024)) ;;
    *[Gg]) echo $((n * 1024 * 1024 * 1024)) ;;
    *) echo "$v" ;;
    esac
}

# run NAME OUTFILE CMD...: times CMD (stdin = corpus), records seconds and KB.
run() {
    local name=$1 out=$2
    shift 2
    "$TIME" -f "%e %M" -o "$T/time" "$@" < "$T/corpus" > "$out" 2> "$T/stderr"
    read -r SECS KB < "$T/time"
}

row() { # name secs kb
    local name=$1 secs=$2 kb=$3
    awk -v n="$name" -v s="$secs" -v kb="$kb" -v urls="$N" -v bytes="$BYTES" -v base="${SORT_SECS:-0}" 'BEGIN {
        if (s <= 0) s = 0.005;
        r = base > 0 ? sprintf("%.2fx", base / s) : "-";
        printf "%-34s %8.2f s %12.0f URLs/s %8.1f MB/s %9.1f MiB RSS %9s\n", n, s, urls / s, bytes / s / 1e6, kb / 1024, r }'
}

gen() {
    "$GEN" "$1" > "$T/corpus"
    BYTES=$(stat -c %s "$T/corpus")
}

if [ "$MODE" = growth ]; then
    echo "# growth: time per URL at a fixed cap"
    for n in 10000000 20000000 50000000; do
        N=$n
        gen "$n"
        if [ -z "$CAP" ]; then
            d=$("$HSET" < "$T/corpus" | wc -l)
            CAP=$((d * 8 / 10))
        fi
        run sieve "$T/out" "$CRAWLER" sieve --memory "$CAP" --stats
        awk -v n="$n" -v s="$SECS" -v kb="$KB" -v cap="$CAP" 'BEGIN {
            printf "N=%d cap=%s: %.2f s, %.1f ns/URL, %.1f MiB RSS\n", n, cap, s, s * 1e9 / n, kb / 1024 }'
        rm -f "$T/out"
    done
    exit 0
fi

echo "# sieve benchmark: $N URLs ($MODE)"
gen "$N"
run awk "$T/ref" awk '!s[$0]++'
AWK_SECS=$SECS AWK_KB=$KB
DISTINCT=$(wc -l < "$T/ref")
if [ -z "$CAP" ]; then
    CAPB=$((DISTINCT * 8 / 10))
    [ "$CAPB" -ge $((2 * 1024 * 1024)) ] || CAPB=$((2 * 1024 * 1024))
else
    CAPB=$(to_bytes "$CAP")
fi
CAPK=$((CAPB / 1024))
echo "# corpus: $BYTES bytes, $DISTINCT distinct URLs; cap $CAPB bytes (${CAPK} KiB)"

run "sort -u" "$T/o_sort" sort -u -S "${CAPK}K" -T "$T"
SORT_SECS=$SECS
row "LC_ALL=C sort -u -S cap" "$SECS" "$KB"
rm -f "$T/o_sort"

run cat /dev/null cat
row "cat > /dev/null (read floor)" "$SECS" "$KB"

row "awk '!s[\$0]++'" "$AWK_SECS" "$AWK_KB"

"$TIME" -f "%e %M" -o "$T/time" bash -c "nl -ba -w1 -s\$'\t' | sort -t\$'\t' -k2 -u -S ${CAPK}K -T '$T' | sort -t\$'\t' -k1,1n -S ${CAPK}K -T '$T' | cut -f2-" < "$T/corpus" > "$T/o_nl"
read -r SECS KB < "$T/time"
row "nl|sort -u -k2|sort -n|cut" "$SECS" "$KB"
cmp -s "$T/o_nl" "$T/ref" || echo "note: the GNU pipeline's output differs from awk's"
rm -f "$T/o_nl"

run hashset "$T/o_hs" "$HSET"
HS_SECS=$SECS
row "in-memory hash set (upper bound)" "$SECS" "$KB"
cmp -s "$T/o_hs" "$T/ref" || { echo "FAIL: hash set output differs from awk" >&2; exit 1; }
rm -f "$T/o_hs"

status=0
for mult in 1 4 16; do
    c=$((CAPB * mult))
    run sieve "$T/o_sieve" "$CRAWLER" sieve --memory "$c" --stats
    row "crawler sieve --memory $((c / 1024))K" "$SECS" "$KB"
    if ! cmp "$T/o_sieve" "$T/ref"; then
        echo "FAIL: sieve output differs from awk at cap $c" >&2
        status=1
    fi
    if [ "$mult" = 1 ]; then
        S1_SECS=$SECS S1_KB=$KB
    fi
done
# the --stats of the run at the cap
"$CRAWLER" sieve --memory "$CAPB" --stats < "$T/corpus" 2> "$T/stats" > /dev/null
sed 's/^/#   /' "$T/stats"

echo "# acceptance at cap $CAPB:"
awk -v s="$S1_SECS" -v so="$SORT_SECS" -v hs="$HS_SECS" -v kb="$S1_KB" -v cap="$CAPB" 'BEGIN {
    printf "#   speed vs sort -u: %.2fx (goal >= 5x) %s\n", so / s, (so / s >= 5 ? "PASS" : "MISS");
    printf "#   speed vs hash set: %.2fx (goal >= 1x) %s\n", hs / s, (hs / s >= 1 ? "PASS" : "MISS");
    printf "#   peak RSS %.1f MiB vs cap + 32 MiB = %.1f MiB %s\n", kb / 1024, cap / 1048576 + 32, (kb * 1024 <= cap + 32 * 1048576 ? "PASS" : "MISS") }'
[ "$status" = 0 ] && echo "# output equals awk: PASS"
exit $status
