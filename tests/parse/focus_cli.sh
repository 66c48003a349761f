#!/bin/bash
# `crawler crawl` refuses a focus it cannot use, before it touches its
# output folder: --order focused without --focus, a malformed focus file
# (exit 2 naming the file and line), a file it cannot read.
set -u
crawler="$1"
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
check() { # name expected-rc expected-message-part rc message
    if [ "$2" != "$4" ] || [[ "$5" != *"$3"* ]] || [ -e "$tmp/out" ]; then
        echo "FAIL $1: rc $4 (want $2), out folder $( [ -e "$tmp/out" ] && echo made || echo absent)"
        echo "  message: $5"
        fail=$((fail + 1))
    else
        echo "ok $1"
    fi
}
run() { "$crawler" crawl -o "$tmp/out" --user-agent 'test (x)' "$@" http://127.0.0.1:9/ 2>&1; }
msg=$(run --order focused); rc=$?
check no-focus 2 "--order focused needs --focus FILE" "$rc" "$msg"
printf 'comet\nco-met 2\n' > "$tmp/bad"
msg=$(run --order focused --focus "$tmp/bad"); rc=$?
check malformed 2 "$tmp/bad:2: a term is one word" "$rc" "$msg"
printf 'comet\ncomet\n' > "$tmp/twice"
msg=$(run --focus "$tmp/twice"); rc=$?
check twice 2 "$tmp/twice:2: \"comet\" is listed twice" "$rc" "$msg"
msg=$(run --focus "$tmp/missing"); rc=$?
check unreadable 2 "cannot read the focus file $tmp/missing" "$rc" "$msg"
msg=$(run --order best); rc=$?
check bad-order 2 "expected bfs, depth or focused" "$rc" "$msg"
exit $((fail > 0))
