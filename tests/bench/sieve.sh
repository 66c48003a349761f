#!/bin/bash
# Sieve benchmark: `crawler sieve` against GNU sort -u (same memory cap), an
# order-preserving GNU pipeline, awk '!s[$0]++', an in-memory hash set of
# signatures (the upper bound) and cat (the read floor), on one deterministic
# corpus, in one run. Prints wall and CPU (user + system) time, URLs/s,
# MB/s, peak RSS and the speed ratios to sort -u (wall and CPU: the machine
# may be shared); checks that the sieve's output equals awk's byte for byte.
# Then one row per other sieve (--sieve memory, lsm, offline, bloom) at the
# same cap, with its folder's disk bytes and, for bloom, the measured loss.
#
# usage: sieve.sh [N_URLS (default 20000000)] [CAP (e.g. 8M; default: one
#        tenth of the distinct URLs' signatures, 8 bytes each)]
#        sieve.sh --smoke           ~200k URLs, quick, still checks equality
#        sieve.sh --growth [CAP]    time per URL at 10M, 20M, 50M URLs, fixed cap
#                                   (each the fastest of GROWTH_RUNS, default 2)
#        sieve.sh --billion [N [MEMORY]]  N URLs (default 1000000000) from
#                                   sieve_idgen piped through `crawler sieve
#                                   --memory MEMORY (default 448M) --dir D` into
#                                   its check: wall, CPU, peak RSS, peak disk,
#                                   the check (ids in order, count and hash)
# Env: CRAWLER_BUILD (build dir), BENCH_TMP (scratch folder, default /tmp),
#      BENCH_PERF (--billion: a perf.data path: the sieve runs under perf
#      record, cpu-clock at 99 Hz),
#      BENCH_RUNS (runs of sort -u, the hash set and the sieve at the cap,
#      each row the fastest; default 3, 1 with --smoke).
# Every timed run starts after a sync, so that no earlier run's output is
# still being written back to disk while it runs.
set -euo pipefail

BUILD=${CRAWLER_BUILD:-$(cd "$(dirname "$0")/../.." && pwd)/build}
CRAWLER=$BUILD/crawler/crawler
GEN=$BUILD/tests/bench/sieve/sieve_gen
HSET=$BUILD/tests/bench/sieve/sieve_hashset
IDGEN=$BUILD/tests/bench/sieve/sieve_idgen
TIME=/usr/bin/time
for b in "$CRAWLER" "$GEN" "$HSET" "$IDGEN" "$TIME"; do
    [ -x "$b" ] || { echo "sieve.sh: missing $b (build the targets crawler sieve_gen sieve_hashset sieve_idgen; apt-get install time)" >&2; exit 1; }
done

MODE=full
N=20000000
CAP=
RUNS=${BENCH_RUNS:-3}
case "${1:-}" in
--smoke) MODE=smoke; N=200000; RUNS=1 ;;
--growth) MODE=growth; CAP=${2:-} ;;
--billion) MODE=billion; N=${2:-1000000000}; CAP=${3:-448M} ;;
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

# time_read: SECS (wall), KB (peak RSS) and CPU (user + system seconds)
# from $T/time, written by `$TIME -f "%e %M %U %S"`.
time_read() {
    local u y
    read -r SECS KB u y < "$T/time"
    CPU=$(awk -v u="$u" -v y="$y" 'BEGIN { printf "%.2f", u + y }')
}

# run NAME OUTFILE CMD...: times CMD (stdin = corpus): SECS, KB, CPU.
run() {
    local name=$1 out=$2
    shift 2
    sync
    "$TIME" -f "%e %M %U %S" -o "$T/time" "$@" < "$T/corpus" > "$out" 2> "$T/stderr"
    time_read
}

# best NAME OUTFILE CMD...: run, BENCH_RUNS times; SECS, KB and $T/stderr
# are the fastest run's, CPU the least of the runs' (the machine is shared:
# the other runs of a row measure its noise, not the program).
best() {
    local b_secs= b_kb= b_cpu=
    for _ in $(seq "$RUNS"); do
        run "$@"
        if [ -z "$b_secs" ] || awk -v a="$SECS" -v b="$b_secs" 'BEGIN { exit !(a < b) }'; then
            b_secs=$SECS b_kb=$KB
            cp "$T/stderr" "$T/best_stderr"
        fi
        if [ -z "$b_cpu" ] || awk -v a="$CPU" -v b="$b_cpu" 'BEGIN { exit !(a < b) }'; then
            b_cpu=$CPU
        fi
    done
    SECS=$b_secs KB=$b_kb CPU=$b_cpu
    cp "$T/best_stderr" "$T/stderr"
}

# row NAME SECS KB CPU: wall, CPU (user + system: less disturbed than the
# wall by other work on the machine), and both as ratios to sort -u's.
row() {
    local name=$1 secs=$2 kb=$3 cpu=$4
    awk -v n="$name" -v s="$secs" -v kb="$kb" -v c="$cpu" -v urls="$N" -v bytes="$BYTES" \
        -v base="${SORT_SECS:-0}" -v cbase="${SORT_CPU:-0}" 'BEGIN {
        if (s <= 0) s = 0.005;
        if (c <= 0) c = 0.005;
        r = base > 0 ? sprintf("%.2fx", base / s) : "-";
        rc = cbase > 0 ? sprintf("%.2fx", cbase / c) : "-";
        printf "%-34s %7.2f s %7.2f s CPU %11.0f URLs/s %7.1f MB/s %7.1f MiB RSS %7s %7s CPU\n", n, s, c, urls / s, bytes / s / 1e6, kb / 1024, r, rc }'
}

gen() {
    "$GEN" "$1" > "$T/corpus"
    BYTES=$(stat -c %s "$T/corpus")
}

# impl_row NAME [ARGS...]: one row for `crawler sieve --sieve NAME` at the
# cap, kept in a folder (disk bytes = the folder's size after the run).
# Exact sieves must equal awk; bloom's loss = (distinct - emitted) / distinct.
impl_row() {
    local name=$1 d=$T/d_$1 emitted extra
    shift
    run "$name" "$T/o_impl" "$CRAWLER" sieve --sieve "$name" --memory "$CAPB" --dir "$d" "$@"
    extra=$(printf '%12s disk B' "$(du -sb "$d" | cut -f1)")
    if [ "$name" = bloom ]; then
        emitted=$(wc -l < "$T/o_impl")
        extra="$extra $(awk -v d="$DISTINCT" -v e="$emitted" 'BEGIN { printf "  loss %.5f", (d - e) / d }')"
        awk '!s[$0]++' "$T/o_impl" | cmp -s - "$T/o_impl" || { echo "FAIL: bloom emitted a URL twice" >&2; status=1; }
    elif ! cmp -s "$T/o_impl" "$T/ref"; then
        echo "FAIL: sieve $name output differs from awk" >&2
        status=1
    fi
    echo "$(row "crawler sieve --sieve $name" "$SECS" "$KB" "$CPU") $extra"
    rm -rf "$d" "$T/o_impl"
}

# The billion-URL run: generator | sieve | check, no file of the input or
# of the output; disk = the sieve folder's peak size, sampled every second.
if [ "$MODE" = billion ]; then
    d=$T/d
    mkdir "$d"
    echo "# sieve, $N URLs from sieve_idgen, crawler sieve --memory $CAP --dir D"
    echo "# load before: $(cut -d' ' -f1-3 /proc/loadavg)"
    (
        peak=0
        while :; do
            b=$(du -sb "$d" 2> /dev/null | cut -f1)
            [ "${b:-0}" -gt "$peak" ] && peak=$b && echo "$peak" > "$T/disk_peak"
            sleep 1
        done
    ) &
    sampler=$!
    sync
    set +e
    "$TIME" -f "%e %U %S %M" -o "$T/gen_time" "$IDGEN" "$N" --expect "$T/expect" |
        "$TIME" -f "%e %U %S %M" -o "$T/time" ${BENCH_PERF:+perf record -q -F 99 -e cpu-clock -o "$BENCH_PERF" --} \
            "$CRAWLER" sieve --memory "$CAP" --dir "$d" --stats 2> "$T/stats" |
        "$IDGEN" --check "$T/expect" > "$T/check"
    codes=("${PIPESTATUS[@]}")
    set -e
    kill "$sampler" 2> /dev/null || true
    wait "$sampler" 2> /dev/null || true
    echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
    read -r SECS USR SYS KB < "$T/time"
    read -r _ GUSR GSYS _ < "$T/gen_time"
    awk -v n="$N" -v s="$SECS" -v u="$USR" -v y="$SYS" -v kb="$KB" -v disk="$(cat "$T/disk_peak" 2> /dev/null || echo 0)" \
        -v gu="$GUSR" -v gy="$GSYS" 'BEGIN {
        printf "sieve: %.1f s wall, %.0f URLs/s, CPU %.1f s user + %.1f s system, peak RSS %.1f MiB, peak disk %.2f GB\n",
            s, n / s, u, y, kb / 1024, disk / 1e9;
        printf "generator: CPU %.1f s user + %.1f s system (%.0f ns a URL)\n", gu, gy, (gu + gy) * 1e9 / n }'
    sed 's/^/# /' "$T/stats"
    cat "$T/check"
    [ "${codes[0]}" = 0 ] && [ "${codes[1]}" = 0 ] && [ "${codes[2]}" = 0 ] ||
        { echo "FAIL: exit codes generator ${codes[0]}, sieve ${codes[1]}, check ${codes[2]}" >&2; exit 1; }
    exit 0
fi

if [ "$MODE" = growth ]; then
    echo "# growth: time per URL at a fixed cap"
    for n in 10000000 20000000 50000000; do
        N=$n
        gen "$n"
        if [ -z "$CAP" ]; then
            d=$("$HSET" < "$T/corpus" | wc -l)
            CAP=$((d * 8 / 10))
        fi
        # the fastest of GROWTH_RUNS runs (default 2): the machine is shared
        RUNS=${GROWTH_RUNS:-2}
        best sieve "$T/out" "$CRAWLER" sieve --memory "$CAP" --stats
        awk -v n="$n" -v s="$SECS" -v kb="$KB" -v cap="$CAP" 'BEGIN {
            printf "N=%d cap=%s: %.2f s, %.1f ns/URL, %.1f MiB RSS\n", n, cap, s, s * 1e9 / n, kb / 1024 }'
        grep -E '^(flushes|add_waits|flush_seconds_total) ' "$T/stderr" | tr '\n' ' ' | sed 's/^/#   /; s/ $/\n/'
        PER_URL="${PER_URL:-} $(awk -v s="$SECS" -v n="$n" 'BEGIN { printf "%.1f", s * 1e9 / n }')"
        rm -f "$T/out"
    done
    echo "$PER_URL" | awk '{ r = $NF / $1; printf "# growth %s -> %s ns/URL: %.2fx (goal < 2x) %s\n", $1, $NF, r, (r < 2 ? "PASS" : "MISS") }'
    exit 0
fi

echo "# sieve benchmark: $N URLs ($MODE)"
gen "$N"
run awk "$T/ref" awk '!s[$0]++'
AWK_SECS=$SECS AWK_KB=$KB AWK_CPU=$CPU
DISTINCT=$(wc -l < "$T/ref")
if [ -z "$CAP" ]; then
    CAPB=$((DISTINCT * 8 / 10))
    [ "$CAPB" -ge $((2 * 1024 * 1024)) ] || CAPB=$((2 * 1024 * 1024))
else
    CAPB=$(to_bytes "$CAP")
fi
CAPK=$((CAPB / 1024))
echo "# corpus: $BYTES bytes, $DISTINCT distinct URLs; cap $CAPB bytes (${CAPK} KiB)"

best "sort -u" "$T/o_sort" sort -u -S "${CAPK}K" -T "$T"
SORT_SECS=$SECS SORT_CPU=$CPU
echo "# columns: wall, CPU (user + system), URLs/s and MB/s (wall), peak RSS, x sort -u (wall), x sort -u (CPU)"
row "LC_ALL=C sort -u -S cap" "$SECS" "$KB" "$CPU"
rm -f "$T/o_sort"

run cat /dev/null cat
row "cat > /dev/null (read floor)" "$SECS" "$KB" "$CPU"

row "awk '!s[\$0]++'" "$AWK_SECS" "$AWK_KB" "$AWK_CPU"

"$TIME" -f "%e %M %U %S" -o "$T/time" bash -c "nl -ba -w1 -s\$'\t' | sort -t\$'\t' -k2 -u -S ${CAPK}K -T '$T' | sort -t\$'\t' -k1,1n -S ${CAPK}K -T '$T' | cut -f2-" < "$T/corpus" > "$T/o_nl"
time_read
row "nl|sort -u -k2|sort -n|cut" "$SECS" "$KB" "$CPU"
cmp -s "$T/o_nl" "$T/ref" || echo "note: the GNU pipeline's output differs from awk's"
rm -f "$T/o_nl"

best hashset "$T/o_hs" "$HSET"
HS_SECS=$SECS HS_CPU=$CPU
row "in-memory hash set (upper bound)" "$SECS" "$KB" "$CPU"
cmp -s "$T/o_hs" "$T/ref" || { echo "FAIL: hash set output differs from awk" >&2; exit 1; }
rm -f "$T/o_hs"

status=0
for mult in 1 4 16; do
    c=$((CAPB * mult))
    if [ "$mult" = 1 ]; then
        best sieve "$T/o_sieve" "$CRAWLER" sieve --memory "$c" --stats
    else
        run sieve "$T/o_sieve" "$CRAWLER" sieve --memory "$c" --stats
    fi
    row "crawler sieve --memory $((c / 1024))K" "$SECS" "$KB" "$CPU"
    if ! cmp "$T/o_sieve" "$T/ref"; then
        echo "FAIL: sieve output differs from awk at cap $c" >&2
        status=1
    fi
    if [ "$mult" = 1 ]; then
        S1_SECS=$SECS S1_KB=$KB S1_CPU=$CPU
        cp "$T/stderr" "$T/stats" # the --stats of the run at the cap
    fi
done
# the course's other sieves at the same cap (bloom sized for the corpus at 1%)
for impl in memory lsm offline; do
    impl_row "$impl"
done
impl_row bloom --expected "$DISTINCT" --fp-rate 0.01
# the --stats of the run at the cap
echo "# --stats of the run at cap $CAPB:"
sed 's/^/#   /' "$T/stats"

echo "# acceptance at cap $CAPB:"
awk -v s="$S1_SECS" -v so="$SORT_SECS" -v hs="$HS_SECS" -v kb="$S1_KB" -v cap="$CAPB" \
    -v c="$S1_CPU" -v co="$SORT_CPU" -v hc="$HS_CPU" 'BEGIN {
    printf "#   speed vs sort -u: %.2fx wall (goal >= 10x) %s; %.2fx CPU\n", so / s, (so / s >= 10 ? "PASS" : "MISS"), co / c;
    printf "#   speed vs hash set: %.2fx wall (goal >= 3x) %s; %.2fx CPU\n", hs / s, (hs / s >= 3 ? "PASS" : "MISS"), hc / c;
    printf "#   peak RSS %.1f MiB vs cap + 32 MiB = %.1f MiB %s\n", kb / 1024, cap / 1048576 + 32, (kb * 1024 <= cap + 32 * 1048576 ? "PASS" : "MISS") }'
[ "$status" = 0 ] && echo "# output equals awk: PASS"
exit $status
