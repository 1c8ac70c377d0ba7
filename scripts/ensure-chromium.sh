#!/usr/bin/env bash
# Browser tests drive Debian's Chromium with Playwright (no browser download).
set -euo pipefail
[ -x /usr/bin/chromium ] && exit 0
echo "/usr/bin/chromium not found; installing Debian's chromium" >&2
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
$sudo apt-get update -qq
$sudo apt-get install -y -qq chromium
