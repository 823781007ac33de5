#!/usr/bin/env bash
# Mutation testing with gremlins (hack/tools.sh builds it): each mutant of
# a core package is a small plausible bug, and the package's unit tests
# must fail on it. Writes docs/mutation.md (a table per package: killed,
# lived, not covered, test efficacy, mutant coverage) and
# docs/mutation/PKG.json (gremlins' own report, with every mutant).
#
# Usage: hack/mutation.sh [PKG...]          every core package, or those given
#        DIFF=BASE hack/mutation.sh [PKG...] only the lines changed since BASE
#                                            (prints, writes nothing)
#
# Then it runs hack/claims-mutations.sh: each mutation docs/claims.md names
# must still make its test fail.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
bash hack/tools.sh gremlins
tools_dir=${HELM_INJECT_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/helm-inject/tools}
gremlins="$tools_dir/bin/gremlins"

packages=("$@")
if ((${#packages[@]} == 0)); then
  packages=(release inject manifest chartify helmfile argocd internal/redact internal/cli)
fi
workers=$(nproc)
diff=${DIFF:-}

if [[ -n $diff ]]; then
  status=0
  for p in "${packages[@]}"; do
    echo "== $p (lines changed since $diff)"
    "$gremlins" unleash "./$p" --workers "$workers" --diff "$diff" -S lct || status=1
  done
  exit $status
fi

mkdir -p docs/mutation
out=$(mktemp)
trap 'rm -f "$out"' EXIT
{
  echo "# Mutation testing"
  echo
  echo "Measured $(date -u +%Y-%m-%d) on this project's kind of machine ($(nproc) cores) with"
  echo "gremlins $(sed -n 's/^GREMLINS_VERSION=//p' hack/versions.env): \`make mutation\` (\`hack/mutation.sh\`)."
  echo "Each mutant is a small change of the product code (a comparison"
  echo "negated or its boundary moved, an arithmetic operator swapped, a"
  echo "number negated, ++ turned into --); **killed** means a unit test of"
  echo "the package failed on it, **lived** that every test passed, **not"
  echo "covered** that no unit test runs that line. Efficacy is killed /"
  echo "(killed + lived); mutant coverage is (killed + lived) / all. Every"
  echo "mutant, with its file and line, is in docs/mutation/PKG.json."
  echo
  echo "| package | killed | lived | not covered | timed out | efficacy | mutant coverage |"
  echo "|---|---:|---:|---:|---:|---:|---:|"
} >"$out"
for p in "${packages[@]}"; do
  json="docs/mutation/${p//\//-}.json"
  echo "== $p" >&2
  "$gremlins" unleash "./$p" --workers "$workers" -o "$json" -S lc >&2 || true
  python3 - "$json" "$p" >>"$out" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
k, l, n, t = (r.get(x, 0) for x in ("mutants_killed", "mutants_lived", "mutants_not_covered", "mutants_timed_out"))
eff = 100 * k / (k + l) if k + l else 0
cov = 100 * (k + l) / (k + l + n) if k + l + n else 0
print(f"| `{sys.argv[2]}` | {k} | {l} | {n} | {t} | {eff:.1f}% | {cov:.1f}% |")
PY
done
mv "$out" docs/mutation.md
trap - EXIT
cat docs/mutation.md
bash hack/claims-mutations.sh
