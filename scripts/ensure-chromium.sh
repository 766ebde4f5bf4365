#!/usr/bin/env bash
# Make sure Debian's Chromium is there for the tests marked `browser` (pages opened in headless Chromium).
# Installed only as root with apt; elsewhere the browser tests are skipped with a note (in CI they fail instead).
set -uo pipefail
say() { printf '[chromium] %s\n' "$*"; }

if command -v chromium >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  say "installing Debian's chromium package for the browser tests (about a minute)"
  apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null \
    || say "WARNING: apt-get could not install chromium; the browser tests will fail in CI and be skipped elsewhere"
else
  say "chromium not found: the browser tests are skipped (install Debian's 'chromium' package to run them)"
fi
exit 0
