#!/usr/bin/env bash
# Generate TPC-H tables as Parquet with the PyPI package tpchgen-cli (installed into the
# virtualenv when missing): data/tpch-sf<SF>/<table>.parquet, for the TPC-H dashboards
# (perf/dashboards/tpch-sf1.yaml, tpch-sf10.yaml) and perf/joins.py. Never committed.
#   scripts/tpch-data.sh 1      # scale factor 1: 6 million lineitem rows, ~0.4 GB
#   scripts/tpch-data.sh 10     # scale factor 10: 60 million lineitem rows, ~4 GB
set -euo pipefail
SF="${1:-1}"
VENV="${VENV:-.venv}"
out="${2:-data/tpch-sf$SF}"
tables=lineitem,orders,customer,nation,region,part,supplier
if [ -s "$out/lineitem.parquet" ] && [ -s "$out/supplier.parquet" ]; then
  exit 0
fi
if [ ! -x "$VENV/bin/tpchgen-cli" ]; then
  echo "installing tpchgen-cli into $VENV" >&2
  "$VENV/bin/pip" install -q tpchgen-cli
fi
mkdir -p "$out.partial"
echo "generating TPC-H at scale factor $SF into $out" >&2
"$VENV/bin/tpchgen-cli" parquet -s "$SF" --tables="$tables" --output-dir="$out.partial"
rm -rf "$out"
mv "$out.partial" "$out"
du -sh "$out" >&2
