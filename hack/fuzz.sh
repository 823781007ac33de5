#!/usr/bin/env bash
# Runs every fuzz target of the module for FUZZTIME each (default 1m): the
# fuzz step of the test suite, separate from `make test` because it takes
# minutes and explores new inputs on every run. A failure leaves its input
# in the package's testdata/fuzz/FuzzXxx folder: commit it as a seed, so
# `make test` runs it from then on.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-1m}
found=0
while IFS=: read -r file _ line; do
  name=$(sed -E 's/^func (Fuzz[A-Za-z0-9_]*)\(.*/\1/' <<<"$line")
  pkg=./$(dirname "$file")
  echo "== $pkg $name ($fuzztime)"
  go test "$pkg" -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime"
  found=$((found + 1))
done < <(git grep -n '^func Fuzz' -- '*_test.go')
echo "== $found fuzz targets ran $fuzztime each"
