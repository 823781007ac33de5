#!/bin/sh
# Install hook of the Helm plugin: makes sure $HELM_PLUGIN_DIR/bin/helm-inject
# exists. A release archive ships the binary; a source checkout builds it
# with the local Go toolchain (offline, from the module cache).
set -eu
dir=${HELM_PLUGIN_DIR:?HELM_PLUGIN_DIR is not set}
if [ -x "$dir/bin/helm-inject" ]; then
  echo "helm-inject: using $dir/bin/helm-inject"
  exit 0
fi
# A release archive has the binary at its top level.
if [ -x "$dir/helm-inject" ]; then
  mkdir -p "$dir/bin"
  cp "$dir/helm-inject" "$dir/bin/helm-inject"
  echo "helm-inject: installed the release binary"
  exit 0
fi
if [ -f "$dir/go.mod" ] && command -v go >/dev/null 2>&1; then
  echo "helm-inject: building from source in $dir"
  cd "$dir"
  GOTOOLCHAIN=local CGO_ENABLED=0 go build -trimpath -o bin/helm-inject .
  exit 0
fi
echo "helm-inject: no binary in $dir/bin and no Go toolchain to build one;" >&2
echo "install from a release archive for your OS and architecture, or install Go" >&2
exit 1
