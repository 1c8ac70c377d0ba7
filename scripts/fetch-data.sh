#!/usr/bin/env bash
# Fetch a file of the vega-datasets npm package into data/: flights-3m.parquet (3 million
# US flights, the default), or airports.csv (the airports their codes name):
#   scripts/fetch-data.sh [data/flights-3m.parquet | data/airports.csv]
set -euo pipefail
VERSION="${VEGA_DATASETS_VERSION:-3.2.1}"
out="${1:-data/flights-3m.parquet}"
[ -s "$out" ] && exit 0
mkdir -p "$(dirname "$out")"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "fetching vega-datasets@$VERSION from the npm registry" >&2
(cd "$tmp" && npm pack --silent "vega-datasets@$VERSION" >/dev/null)
name=$(basename "$out")
tar -xzf "$tmp"/vega-datasets-*.tgz -C "$tmp" "package/data/$name"
mv "$tmp/package/data/$name" "$out.partial"
mv "$out.partial" "$out"
echo "wrote $out ($(du -h "$out" | cut -f1))" >&2
