#!/bin/bash
# `crawler sieve` against awk '!s[$0]++': one run, two runs sharing --dir,
# overlong and NUL lines skipped with their line numbers, usage errors.
set -euo pipefail
BIN=${1:?usage: cli.sh path/to/crawler}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# deterministic input with repeats
awk 'BEGIN { srand(7); for (i = 0; i < 60000; i++) printf "https://h%d.example.org/a/%d?x=%d\n", int(rand()*40), int(rand()*4000), int(rand()*3) }' > "$T/in"
head -n 30000 "$T/in" > "$T/in1"
tail -n 40000 "$T/in" > "$T/in2"

"$BIN" sieve --memory 1M < "$T/in" > "$T/out" || fail "single run"
awk '!s[$0]++' "$T/in" > "$T/ref"
cmp "$T/out" "$T/ref" || fail "single run differs from awk"

"$BIN" sieve --memory 1M --dir "$T/d" < "$T/in1" > "$T/o1" || fail "dir run 1"
"$BIN" sieve --memory 1M --dir "$T/d" --stats < "$T/in2" > "$T/o2" 2> "$T/stats" || fail "dir run 2"
cat "$T/in1" "$T/in2" | awk '!s[$0]++' > "$T/ref12"
cat "$T/o1" "$T/o2" | cmp - "$T/ref12" || fail "two --dir runs differ from awk"
grep -q '^flushes [1-9]' "$T/stats" || fail "stats: no flushes"
grep -q '^z_bytes_per_signature ' "$T/stats" || fail "stats: no bytes per signature"
want=$(wc -l < "$T/o2")
grep -q "^emitted $want\$" "$T/stats" || fail "stats: emitted count differs from output ($want)"

# the other sieves (--sieve NAME): one run and two runs sharing --dir
for s in memory lsm offline bloom; do
    opts=(--sieve "$s" --memory 1M)
    [ "$s" = bloom ] && opts+=(--expected 1000000 --fp-rate 1e-9)
    "$BIN" sieve "${opts[@]}" < "$T/in" > "$T/out_$s" || fail "--sieve $s run"
    cmp "$T/out_$s" "$T/ref" || fail "--sieve $s differs from awk"
    "$BIN" sieve "${opts[@]}" --dir "$T/d_$s" < "$T/in1" > "$T/o1_$s" || fail "--sieve $s dir run 1"
    "$BIN" sieve "${opts[@]}" --dir "$T/d_$s" < "$T/in2" > "$T/o2_$s" || fail "--sieve $s dir run 2"
    cat "$T/o1_$s" "$T/o2_$s" | cmp - "$T/ref12" || fail "--sieve $s: two --dir runs differ from awk"
done
"$BIN" sieve --sieve bloom --expected 100 --fp-rate 0.01 --stats < "$T/in" > /dev/null 2> "$T/bstats" || fail "bloom stats run"
grep -q '^filter_fp_estimate ' "$T/bstats" || fail "bloom stats: no estimate"
grep -q 'warning: estimated false-positive rate' "$T/bstats" || fail "overfull bloom did not warn"
[ "$(grep -c 'warning: estimated' "$T/bstats")" = 1 ] || fail "bloom warned more than once"
mkdir "$T/tmp"
TMPDIR=$T/tmp "$BIN" sieve --sieve lsm < "$T/in1" > /dev/null || fail "lsm run in a temporary folder"
[ -z "$(ls -A "$T/tmp")" ] || fail "the temporary sieve folder was left behind"

# overlong and NUL lines: reported with line numbers, skipped, counted
{ echo "http://a/1"; head -c 300 /dev/zero | tr '\0' x; echo; printf 'http://b/\0x\n'; echo "http://a/1"; echo "http://c/"; } > "$T/bad"
"$BIN" sieve --max-line 100 --stats < "$T/bad" > "$T/ob" 2> "$T/eb" || fail "bad-lines run"
printf 'http://a/1\nhttp://c/\n' | cmp - "$T/ob" || fail "bad lines not skipped"
grep -q 'line 2: longer than 100' "$T/eb" || fail "overlong line not reported"
grep -q 'line 3: contains a NUL' "$T/eb" || fail "NUL line not reported"
grep -q '^lines_skipped 2$' "$T/eb" || fail "skipped count"

# the line splitter on random input against a reference: lines of 0 to 240
# bytes with NULs anywhere (64-byte block edges included), lines of exactly
# --max-line and one byte more, lines longer than the read buffer, repeats,
# a last line without its newline
python3 - "$T/rnd" "$T/rnd_want" "$T/rnd_skip" <<'EOF'
import random, sys
random.seed(11)
lines = []
for i in range(40000):
    r = random.random()
    if r < 0.01:
        ln = random.choice([200, 201, 199, 64, 63, 65, 128])
    elif r < 0.0102:
        ln = random.choice([300000, 700000])
    else:
        ln = random.randint(0, 240)
    if lines and random.random() < 0.3:
        b = random.choice(lines)
    else:
        b = bytearray(random.choice(b"abcdefghij/:.?=") for _ in range(ln))
        if random.random() < 0.03 and ln > 0:
            b[random.randrange(ln)] = 0
        b = bytes(b)
    lines.append(b)
seen, want, skipped = set(), [], []
for no, b in enumerate(lines, 1):
    if len(b) > 200 or b"\0" in b:
        skipped.append(no)
    elif b not in seen:
        seen.add(b)
        want.append(b)
open(sys.argv[1], "wb").write(b"\n".join(lines))
open(sys.argv[2], "wb").write(b"".join(w + b"\n" for w in want))
open(sys.argv[3], "w").write("".join("%d\n" % n for n in skipped))
EOF
# stdin a regular file and a pipe (reads of any length)
for how in file pipe; do
    case $how in
    file) "$BIN" sieve --max-line 200 --stats < "$T/rnd" > "$T/rnd_out" 2> "$T/rnd_err" ;;
    pipe) cat "$T/rnd" | "$BIN" sieve --max-line 200 --stats > "$T/rnd_out" 2> "$T/rnd_err" ;;
    esac || fail "random lines run ($how)"
    cmp "$T/rnd_out" "$T/rnd_want" || fail "random lines ($how): output differs from the reference"
    sed -n 's/^crawler sieve: line \([0-9]*\): .*skipped$/\1/p' "$T/rnd_err" | cmp - "$T/rnd_skip" ||
        fail "random lines ($how): skipped line numbers differ"
    grep -q "^lines_skipped $(wc -l < "$T/rnd_skip")\$" "$T/rnd_err" || fail "random lines ($how): skipped count"
done
# a regular file read from where stdin stands (after its first line), and
# left at its end
{
    IFS= read -r first
    "$BIN" sieve > "$T/in_rest_out" || fail "run from mid-file"
    [ "$(head -c 1 | wc -c)" = 0 ] || fail "stdin not left at its end"
} < "$T/in"
[ "$first" = "$(head -n 1 "$T/in")" ] || fail "the shell's read took more than the first line"
tail -n +2 "$T/in" | awk '!s[$0]++' | cmp - "$T/in_rest_out" || fail "run from mid-file differs from awk"

# usage errors exit 2
set +e
"$BIN" sieve --memory banana < /dev/null > /dev/null 2>&1; [ $? -eq 2 ] || fail "bad --memory not a usage error"
"$BIN" sieve --frobnicate < /dev/null > /dev/null 2>&1; [ $? -eq 2 ] || fail "unknown option not a usage error"
"$BIN" sieve --fp-rate 2 < /dev/null > /dev/null 2>&1; [ $? -eq 2 ] || fail "bad --fp-rate not a usage error"
"$BIN" sieve --sieve nosuch < /dev/null > /dev/null 2>&1; [ $? -ne 0 ] || fail "unknown --sieve accepted"
echo OK
