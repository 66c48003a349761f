#!/usr/bin/env bash
# Installs, with apt-get and as root, the Debian 12 packages that building,
# testing and benchmarking the crawler need, when they are missing. Idempotent:
# a second run installs nothing. Nothing is downloaded from anywhere but
# Debian's archive.
set -euo pipefail

packages=(
  build-essential cmake pkg-config clang clang-format
  libcurl4-openssl-dev libxml2-dev libc-ares-dev libxxhash-dev libuv1-dev
  check libsubunit-dev libidn2-dev libpsl-dev zlib1g-dev
  libbrotli-dev librocksdb-dev libdeflate-dev libpcre2-dev libzip-dev
  python3 time wget curl wrk nginx-light openssl
  redis-server libhiredis-dev
)

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [ "$status" = "install ok installed" ] || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: missing Debian packages: ${missing[*]}" >&2
  echo "install-deps: run this script as root, or: apt-get install ${missing[*]}" >&2
  exit 1
fi
echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
