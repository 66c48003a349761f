#!/usr/bin/env bash
# The tree's one style: every C file git tracks (or would track) must be
# exactly what clang-format makes of it with the root .clang-format. Prints
# the files that are not, and how to fix them; exits 1 if any.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
command -v clang-format >/dev/null || { echo "format-check: clang-format is not installed (crawler/install-deps.sh installs it)" >&2; exit 1; }
bad=()
while IFS= read -r -d '' f; do
  clang-format --style=file "$f" | cmp -s - "$f" || bad+=("$f")
done < <(git ls-files -z --cached --others --exclude-standard -- '*.c' '*.h')
if (( ${#bad[@]} )); then
  printf 'format-check: not formatted: %s\n' "${bad[@]}" >&2
  echo "format-check: run: clang-format -i ${bad[*]}" >&2
  exit 1
fi
n=$(git ls-files --cached --others --exclude-standard -- '*.c' '*.h' | wc -l)
echo "format-check: $n files formatted"
