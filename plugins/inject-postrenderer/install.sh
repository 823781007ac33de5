#!/bin/sh
# Install hook of the Helm 4 post-renderer plugin: puts a helm-inject binary
# in $HELM_PLUGIN_DIR/bin, taken from the release archive or the source
# checkout this folder is part of (built offline with the local Go). A
# binary found there is used only if it reports the version of the
# checkout's plugin.yaml (and, in a git checkout, its commit).
set -eu
dir=${HELM_PLUGIN_DIR:?HELM_PLUGIN_DIR is not set}
root=$(cd -P "$dir" && cd ../.. && pwd)
version=$(sed -n 's/^version: *//p' "$root/plugin.yaml" 2>/dev/null | tr -d "\"'")
commit=
if [ -e "$root/.git" ] && command -v git >/dev/null 2>&1; then
  commit=$(git -C "$root" rev-parse HEAD 2>/dev/null || true)
fi
field() {
  sed -n "s/^ *\"$1\": *\"\\([^\"]*\\)\".*/\\1/p"
}
mkdir -p "$dir/bin"
for candidate in "$root/bin/helm-inject" "$root/helm-inject"; do
  [ -x "$candidate" ] || continue
  info=$("$candidate" version -o json 2>/dev/null) || continue
  have_version=$(printf '%s\n' "$info" | field version)
  have_commit=$(printf '%s\n' "$info" | field commit)
  if [ -n "$version" ] && [ "$have_version" = "$version" ] && { [ -z "$commit" ] || [ "$have_commit" = "$commit" ]; }; then
    cp "$candidate" "$dir/bin/helm-inject"
    echo "helm-inject: using $candidate"
    exit 0
  fi
  echo "helm-inject: $candidate is version ${have_version:-unknown}${have_commit:+ (commit $have_commit)}; plugin.yaml wants ${version:-unknown}${commit:+ (commit $commit)}: not using it"
done
if [ -f "$root/go.mod" ] && command -v go >/dev/null 2>&1; then
  echo "helm-inject: building version $version from source in $root"
  pkg=github.com/helm-inject/helm-inject/internal/version
  (cd "$root" && GOTOOLCHAIN=local CGO_ENABLED=0 go build -trimpath \
    -ldflags "-X $pkg.version=$version -X $pkg.commit=$commit" -o "$dir/bin/helm-inject" .)
  exit 0
fi
echo "helm-inject: no helm-inject binary and no Go toolchain to build one" >&2
exit 1
