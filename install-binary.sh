#!/bin/sh
# Install hook of the Helm plugin: makes sure $HELM_PLUGIN_DIR/bin/helm-inject
# exists.
#
#  1. A release archive (helm plugin install <archive URL>) has the binary
#     at its top level; it is copied to bin/.
#  2. A source checkout (helm plugin install <path or git URL>) is built with
#     the local Go toolchain: offline when the module cache is warm.
#  3. A source checkout on a machine without Go downloads the release archive
#     for this OS and architecture, of the version in plugin.yaml, from
#     $HELM_INJECT_RELEASE_URL (default: the project's GitHub release).
set -eu
dir=${HELM_PLUGIN_DIR:?HELM_PLUGIN_DIR is not set}
if [ -x "$dir/bin/helm-inject" ]; then
  echo "helm-inject: using $dir/bin/helm-inject"
  exit 0
fi
if [ -f "$dir/helm-inject" ]; then
  mkdir -p "$dir/bin"
  cp "$dir/helm-inject" "$dir/bin/helm-inject"
  chmod 0755 "$dir/bin/helm-inject"
  echo "helm-inject: installed the release binary in $dir/bin"
  exit 0
fi

if [ -f "$dir/go.mod" ] && command -v go >/dev/null 2>&1; then
  echo "helm-inject: building from source in $dir"
  cd "$dir"
  GOTOOLCHAIN=local CGO_ENABLED=0 go build -trimpath -o bin/helm-inject .
  exit 0
fi

version=$(sed -n 's/^version: *//p' "$dir/plugin.yaml")
case $(uname -s) in
  Linux) os=linux ;;
  Darwin) os=darwin ;;
  *) echo "helm-inject: no release archive for $(uname -s) in this hook; download the zip by hand" >&2; exit 1 ;;
esac
case $(uname -m) in
  x86_64 | amd64) arch=amd64 ;;
  aarch64 | arm64) arch=arm64 ;;
  *) echo "helm-inject: no release archive for architecture $(uname -m)" >&2; exit 1 ;;
esac
base=${HELM_INJECT_RELEASE_URL:-https://github.com/helm-inject/helm-inject/releases/download/v$version}
url="$base/helm-inject-$os-$arch.tar.gz"
echo "helm-inject: no Go toolchain; downloading $url"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if ! curl -fsSL -o "$tmp/release.tar.gz" "$url"; then
  echo "helm-inject: could not download $url; install Go and re-run, or install the archive with 'helm plugin install <archive URL>'" >&2
  exit 1
fi
# The archive must match the release's checksums.txt.
if ! curl -fsSL -o "$tmp/checksums.txt" "$base/checksums.txt"; then
  echo "helm-inject: could not download $base/checksums.txt to verify the archive" >&2
  exit 1
fi
want=$(awk -v f="helm-inject-$os-$arch.tar.gz" '$2 == f {print $1}' "$tmp/checksums.txt")
if command -v sha256sum >/dev/null 2>&1; then
  got=$(sha256sum "$tmp/release.tar.gz" | awk '{print $1}')
else
  got=$(shasum -a 256 "$tmp/release.tar.gz" | awk '{print $1}')
fi
if [ -z "$want" ] || [ "$want" != "$got" ]; then
  echo "helm-inject: checksum of $url is $got, checksums.txt says '${want}'; not installing" >&2
  exit 1
fi
tar -xzf "$tmp/release.tar.gz" -C "$tmp" helm-inject
mkdir -p "$dir/bin"
cp "$tmp/helm-inject" "$dir/bin/helm-inject"
chmod 0755 "$dir/bin/helm-inject"
echo "helm-inject: installed $dir/bin/helm-inject from $url"
