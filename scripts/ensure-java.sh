#!/usr/bin/env bash
# Spark 4 needs Java 17 or newer: install Debian's OpenJDK 17 if java is missing or older.
set -euo pipefail
major=0
if command -v java >/dev/null 2>&1; then
  major=$(java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -1)
fi
if [ "${major:-0}" -ge 17 ]; then
  exit 0
fi
echo "Java 17+ not found (have: ${major:-none}); installing openjdk-17-jre-headless" >&2
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
$sudo apt-get update -qq
$sudo apt-get install -y -qq openjdk-17-jre-headless
