#!/bin/sh
# Install hook of the Helm 4 post-renderer plugin: puts a helm-inject binary
# in $HELM_PLUGIN_DIR/bin, taken from the release archive or the source
# checkout this folder is part of (built offline with the local Go).
set -eu
dir=${HELM_PLUGIN_DIR:?HELM_PLUGIN_DIR is not set}
root=$(cd -P "$dir" && cd ../.. && pwd)
mkdir -p "$dir/bin"
for candidate in "$root/bin/helm-inject" "$root/helm-inject"; do
  if [ -x "$candidate" ]; then
    cp "$candidate" "$dir/bin/helm-inject"
    echo "helm-inject: using $candidate"
    exit 0
  fi
done
if [ -f "$root/go.mod" ] && command -v go >/dev/null 2>&1; then
  echo "helm-inject: building from source in $root"
  (cd "$root" && GOTOOLCHAIN=local CGO_ENABLED=0 go build -trimpath -o "$dir/bin/helm-inject" .)
  exit 0
fi
echo "helm-inject: no helm-inject binary and no Go toolchain to build one" >&2
exit 1
