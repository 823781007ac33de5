#!/bin/sh
# Install and update hook of the Helm plugin: makes sure
# $HELM_PLUGIN_DIR/bin/helm-inject is the version plugin.yaml names (and,
# in a git checkout, was built from its current commit). `helm plugin
# update` pulls new sources but keeps bin/, so a binary that does not match
# is replaced, never kept:
#
#  1. A release archive (helm plugin install <archive URL>) has the binary
#     at its top level; it is copied to bin/.
#  2. A source checkout (helm plugin install <path or git URL>) is built with
#     the local Go toolchain: offline when the module cache is warm.
#  3. A source checkout on a machine without Go downloads the release archive
#     for this OS and architecture, of the version in plugin.yaml, from
#     $HELM_INJECT_RELEASE_URL (default: the project's GitHub release), over
#     https only, and checks it against the release's checksums.txt.
#     HELM_INJECT_ALLOW_INSECURE_DOWNLOAD=1 permits plain http (for a test
#     server on this machine; never for a real download).
set -eu
dir=${HELM_PLUGIN_DIR:?HELM_PLUGIN_DIR is not set}
bin="$dir/bin/helm-inject"
version=$(sed -n 's/^version: *//p' "$dir/plugin.yaml" | tr -d "\"'")
commit=
if [ -e "$dir/.git" ] && command -v git >/dev/null 2>&1; then
  commit=$(git -C "$dir" rev-parse HEAD 2>/dev/null || true)
fi

# field NAME prints a string field of `helm-inject version -o json`.
field() {
  sed -n "s/^ *\"$1\": *\"\\([^\"]*\\)\".*/\\1/p"
}
# matches BINARY: true when BINARY reports plugin.yaml's version and, in a
# git checkout, the checkout's commit; says what it found otherwise.
matches() {
  [ -x "$1" ] || return 1
  info=$("$1" version -o json 2>/dev/null) || { echo "helm-inject: $1 does not run; not using it"; return 1; }
  have_version=$(printf '%s\n' "$info" | field version)
  have_commit=$(printf '%s\n' "$info" | field commit)
  if [ "$have_version" = "$version" ] && { [ -z "$commit" ] || [ "$have_commit" = "$commit" ]; }; then
    return 0
  fi
  echo "helm-inject: $1 is version ${have_version:-unknown}${have_commit:+ (commit $have_commit)}; plugin.yaml wants $version${commit:+ (commit $commit)}: not using it"
  return 1
}
if matches "$bin"; then
  echo "helm-inject: $bin is version $version; keeping it"
  exit 0
fi

# A release archive's binary (an archive has no go.mod); in a source
# checkout, a leftover build there (git ignores it) is used only if it is
# the version wanted.
if [ -f "$dir/helm-inject" ] && { [ ! -f "$dir/go.mod" ] || matches "$dir/helm-inject"; }; then
  mkdir -p "$dir/bin"
  cp "$dir/helm-inject" "$bin.new"
  chmod 0755 "$bin.new"
  mv -f "$bin.new" "$bin"
  echo "helm-inject: installed the release binary in $dir/bin"
  exit 0
fi

if [ -f "$dir/go.mod" ] && command -v go >/dev/null 2>&1; then
  echo "helm-inject: building version $version from source in $dir"
  cd "$dir"
  pkg=github.com/helm-inject/helm-inject/internal/version
  GOTOOLCHAIN=local CGO_ENABLED=0 go build -trimpath \
    -ldflags "-X $pkg.version=$version -X $pkg.commit=$commit" -o "$bin.new" .
  mv -f "$bin.new" "$bin"
  exit 0
fi

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
# Only https, redirects included, unless a test allows its local server.
proto='=https'
case $base in
  https://*) ;;
  *)
    if [ "${HELM_INJECT_ALLOW_INSECURE_DOWNLOAD:-}" != 1 ]; then
      echo "helm-inject: refusing to download from $base: not an https URL (HELM_INJECT_RELEASE_URL); the archive and its checksums would travel unprotected" >&2
      exit 1
    fi
    proto='=http,https'
    ;;
esac
url="$base/helm-inject-$os-$arch.tar.gz"
echo "helm-inject: no Go toolchain; downloading $url"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if ! curl -fsSL --proto "$proto" --proto-redir "$proto" -o "$tmp/release.tar.gz" "$url"; then
  echo "helm-inject: could not download $url; install Go and re-run, or install the archive with 'helm plugin install <archive URL>'" >&2
  exit 1
fi
# The archive must match the release's checksums.txt.
if ! curl -fsSL --proto "$proto" --proto-redir "$proto" -o "$tmp/checksums.txt" "$base/checksums.txt"; then
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
cp "$tmp/helm-inject" "$bin.new"
chmod 0755 "$bin.new"
mv -f "$bin.new" "$bin"
echo "helm-inject: installed $bin from $url"
