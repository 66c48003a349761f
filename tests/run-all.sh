#!/usr/bin/env bash
# README command (2): build and run every test.
#   0. the format check: every C file is clang-format's output;
#   1. a normal build (warnings are errors) and every ctest test in it:
#      Check unit suites, conformance suites, end-to-end crawls of the local
#      test web, benchmark smoke runs;
#   2. an AddressSanitizer + UndefinedBehaviorSanitizer build and every test
#      in it but the benchmark smoke runs;
#   3. a clang libFuzzer build, each harness run for FUZZ_SECONDS (default 60).
# Exits non-zero on the first failure.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
jobs=$(nproc)
fuzz_seconds=${FUZZ_SECONDS:-60}

bash "$root/crawler/install-deps.sh"

step() { printf '\n=== %s ===\n' "$*"; }

step "format check (clang-format, the root .clang-format)"
bash "$root/tests/format-check.sh"

step "normal build"
cmake -S "$root" -B "$build/normal" -DCRAWLER_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build/normal" -j "$jobs"
step "tests (normal build)"
ctest --test-dir "$build/normal" --output-on-failure -j "$jobs" --timeout 900

step "sanitizer build (ASan + UBSan)"
cmake -S "$root" -B "$build/sanitize" -DCRAWLER_WERROR=ON -DCRAWLER_SANITIZE=ON \
  -DCMAKE_BUILD_TYPE=Debug >/dev/null
cmake --build "$build/sanitize" -j "$jobs"
step "tests (sanitizer build)"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir "$build/sanitize" --output-on-failure -j "$jobs" --timeout 1800 -LE bench

step "fuzzing (libFuzzer, ${fuzz_seconds}s per harness)"
cmake -S "$root" -B "$build/fuzz" -DCMAKE_C_COMPILER=clang -DCRAWLER_WERROR=ON \
  -DCRAWLER_FUZZ=ON -DCRAWLER_SANITIZE=ON -DFUZZ_SECONDS="$fuzz_seconds" \
  -DCMAKE_BUILD_TYPE=Debug >/dev/null
cmake --build "$build/fuzz" -j "$jobs"
ctest --test-dir "$build/fuzz" --output-on-failure -j "$jobs" -L fuzz

step "all tests passed"
