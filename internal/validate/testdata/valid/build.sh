#!/bin/sh
set -eu

for f in "$@"; do
  if [ -f "$f" ]; then
    echo "building $f"
  fi
done
