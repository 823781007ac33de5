#!/usr/bin/env bash
# Builds the real components used by the tests and the demo into a cache
# folder outside the repository, shared by every checkout on the machine:
# $HELM_INJECT_TOOLS_DIR, default ${XDG_CACHE_HOME:-~/.cache}/helm-inject/tools
# (internal/testenv looks there by the same rule).
#
# Nothing is downloaded as a prebuilt binary: everything is built from the Go
# module proxy. Each tool is built once; a stamp file next to the binary records
# the version it was built from, so a second run with a warm cache returns in
# seconds, and changing a version in hack/versions.env rebuilds only that tool.
#
# Usage: hack/tools.sh [TOOL...]   (default: every tool the test suite needs)
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=versions.env
source "$repo/hack/versions.env"

tools_dir=${HELM_INJECT_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/helm-inject/tools}
bin="$tools_dir/bin"
src="$tools_dir/src"
mkdir -p "$bin" "$src"

# The tools are built with the local Go toolchain only; a module that asks for a
# newer Go fails loudly instead of fetching a toolchain.
export GOTOOLCHAIN=local
export CGO_ENABLED=0
export GOFLAGS=-mod=mod

log() { printf 'tools: %s\n' "$*" >&2; }

# fresh NAME VERSION: true when bin/NAME exists and was built from VERSION.
fresh() {
  [[ -x "$bin/$1" && -f "$bin/.$1.version" && "$(cat "$bin/.$1.version")" == "$2" ]]
}
stamp() { printf '%s\n' "$2" >"$bin/.$1.version"; }

build_helm() {
  fresh helm "$HELM_VERSION" && return
  log "building helm $HELM_VERSION (about 3 minutes on a cold cache)"
  # Without these ldflags helm reports "v3.22" and assumes Kubernetes v1.20.
  local minor=${KUBERNETES_VERSION#v1.}; minor=${minor%%.*}
  local ld="-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION"
  for pkg in helm.sh/helm/v3/pkg/chartutil helm.sh/helm/v3/pkg/lint/rules; do
    ld+=" -X $pkg.k8sVersionMajor=1 -X $pkg.k8sVersionMinor=$minor"
  done
  GOBIN="$bin" go install -trimpath -ldflags "$ld" "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
  stamp helm "$HELM_VERSION"
}

build_kwok() {
  fresh kwok "$KWOK_VERSION" && return
  log "building kwok $KWOK_VERSION (about 2 minutes on a cold cache)"
  GOBIN="$bin" go install -trimpath -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
  stamp kwok "$KWOK_VERSION"
}

# etcd's server module has replace directives, so it cannot be go-installed:
# build it from a throwaway wrapper module that pins its sibling modules.
build_etcd() {
  fresh etcd "$ETCD_VERSION" && return
  log "building etcd $ETCD_VERSION (about 1 minute on a cold cache)"
  local dir="$src/etcd"
  rm -rf "$dir" && mkdir -p "$dir"
  cat >"$dir/go.mod" <<MOD
module helm-inject.local/tools/etcd

go 1.26

require go.etcd.io/etcd/server/v3 $ETCD_VERSION

replace (
	go.etcd.io/etcd/api/v3 => go.etcd.io/etcd/api/v3 $ETCD_VERSION
	go.etcd.io/etcd/client/pkg/v3 => go.etcd.io/etcd/client/pkg/v3 $ETCD_VERSION
	go.etcd.io/etcd/client/v3 => go.etcd.io/etcd/client/v3 $ETCD_VERSION
	go.etcd.io/etcd/pkg/v3 => go.etcd.io/etcd/pkg/v3 $ETCD_VERSION
)
MOD
  (cd "$dir" && go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION" \
    && go build -trimpath -ldflags "-s -w" -o "$bin/etcd" go.etcd.io/etcd/server/v3)
  stamp etcd "$ETCD_VERSION"
}

# kube-apiserver, kube-controller-manager and kube-scheduler come from
# k8s.io/kubernetes, whose go.mod points every staging module at a local path.
# The wrapper module replaces each of them with the published k8s.io/X v0.N.P.
build_kubernetes() {
  local cmds=(kube-apiserver kube-controller-manager kube-scheduler)
  local all_fresh=1
  for c in "${cmds[@]}"; do fresh "$c" "$KUBERNETES_VERSION" || all_fresh=0; done
  ((all_fresh)) && return
  log "building ${cmds[*]} $KUBERNETES_VERSION (10-15 minutes on a cold cache)"
  local dir="$src/kubernetes"
  kubernetes_module "$dir"
  local ld="-s -w -X k8s.io/component-base/version.gitVersion=$KUBERNETES_VERSION"
  local minor=${KUBERNETES_VERSION#v1.}; minor=${minor%%.*}
  ld+=" -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor"
  (
    cd "$dir"
    for c in "${cmds[@]}"; do go get "k8s.io/kubernetes/cmd/$c@$KUBERNETES_VERSION"; done
    for c in "${cmds[@]}"; do
      go build -trimpath -ldflags "$ld" -o "$bin/$c" "k8s.io/kubernetes/cmd/$c"
    done
  )
  for c in "${cmds[@]}"; do stamp "$c" "$KUBERNETES_VERSION"; done
}

# kubernetes_module DIR writes the wrapper module that builds commands of
# k8s.io/kubernetes at $KUBERNETES_VERSION.
kubernetes_module() {
  local dir=$1 staging=v0.${KUBERNETES_VERSION#v1.}
  rm -rf "$dir" && mkdir -p "$dir"
  local gomod
  gomod=$(cd "$dir" && go mod download -json "k8s.io/kubernetes@$KUBERNETES_VERSION" | sed -n 's/.*"GoMod": "\(.*\)",*/\1/p')
  {
    printf 'module helm-inject.local/tools/kubernetes\n\ngo 1.26\n\nrequire k8s.io/kubernetes %s\n\nreplace (\n' "$KUBERNETES_VERSION"
    # The sample modules are not published on the module proxy; nothing we build needs them.
    sed -n '/^replace (/,/^)/p' "$gomod" | awk '/=> \.\/staging/ {print $1}' |
      grep -v -e sample-cli-plugin -e sample-controller |
      while read -r m; do printf '\t%s => %s %s\n' "$m" "$m" "$staging"; done
    printf ')\n'
  } >"$dir/go.mod"
}

# kubectl, for the tests that edit live objects as an operator does
# (kubectl patch): its own wrapper module, so that adding it does not
# rebuild the control plane.
build_kubectl() {
  fresh kubectl "$KUBERNETES_VERSION" && return
  log "building kubectl $KUBERNETES_VERSION (about 3 minutes on a cold cache)"
  local dir="$src/kubectl"
  kubernetes_module "$dir"
  local minor=${KUBERNETES_VERSION#v1.}; minor=${minor%%.*}
  local ld="-s -w -X k8s.io/component-base/version.gitVersion=$KUBERNETES_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor"
  (
    cd "$dir"
    go get "k8s.io/kubernetes/cmd/kubectl@$KUBERNETES_VERSION"
    go build -trimpath -ldflags "$ld" -o "$bin/kubectl" k8s.io/kubernetes/cmd/kubectl
  )
  stamp kubectl "$KUBERNETES_VERSION"
}

# istioctl, plus the istio-discovery chart it ships: the tests render that
# chart to get the sidecar injector configuration that
# `istioctl kube-inject` needs to inject without a cluster.
build_istioctl() {
  local share="$tools_dir/share/istio-discovery"
  fresh istioctl "$ISTIO_VERSION" && [[ -f "$share/Chart.yaml" ]] && return
  log "building istioctl $ISTIO_VERSION (about 5 minutes on a cold cache)"
  GOBIN="$bin" go install -trimpath -ldflags "-s -w" "istio.io/istio/istioctl/cmd/istioctl@$ISTIO_VERSION"
  local dir
  dir=$(cd "$src" && go mod download -json "istio.io/istio@$ISTIO_VERSION" | sed -n 's/.*"Dir": "\(.*\)",*/\1/p')
  rm -rf "$share" && mkdir -p "$(dirname "$share")"
  cp -r "$dir/manifests/charts/istio-control/istio-discovery" "$share"
  chmod -R u+w "$share"
  stamp istioctl "$ISTIO_VERSION"
}

# helmfile's go.mod has replace directives (pinning k8s.io modules), so it
# is built from a wrapper module that copies them.
build_helmfile() {
  fresh helmfile "$HELMFILE_VERSION" && return
  log "building helmfile $HELMFILE_VERSION (10-13 minutes on a cold cache)"
  local dir="$src/helmfile"
  rm -rf "$dir" && mkdir -p "$dir"
  local gomod
  gomod=$(cd "$dir" && go mod download -json "github.com/helmfile/helmfile@$HELMFILE_VERSION" | sed -n 's/.*"GoMod": "\(.*\)",*/\1/p')
  {
    printf 'module helm-inject.local/tools/helmfile\n\ngo 1.26\n\nrequire github.com/helmfile/helmfile %s\n\n' "$HELMFILE_VERSION"
    sed -n '/^replace (/,/^)/p' "$gomod" | grep -v '^\s*//'
  } >"$dir/go.mod"
  (
    cd "$dir"
    go get "github.com/helmfile/helmfile@$HELMFILE_VERSION"
    go build -trimpath -ldflags "-s -w -X go.szostok.io/version.version=$HELMFILE_VERSION" -o "$bin/helmfile" github.com/helmfile/helmfile
  )
  stamp helmfile "$HELMFILE_VERSION"
}

# Helm 4, installed as helm4 (beside helm 3), and as helm in its own folder
# (helm4/helm): helm 4 names its server-side apply field manager after its
# file name, and users run it as helm.
build_helm4() {
  fresh helm4 "$HELM4_VERSION" && [[ -x "$tools_dir/helm4/helm" ]] && return
  log "building helm $HELM4_VERSION as helm4 (about 3 minutes on a cold cache)"
  local tmp="$src/helm4-bin"
  rm -rf "$tmp" && mkdir -p "$tmp"
  GOBIN="$tmp" go install -trimpath -ldflags "-s -w -X helm.sh/helm/v4/internal/version.version=$HELM4_VERSION" "helm.sh/helm/v4/cmd/helm@$HELM4_VERSION"
  mv "$tmp/helm" "$bin/helm4"
  mkdir -p "$tools_dir/helm4"
  cp "$bin/helm4" "$tools_dir/helm4/helm"
  stamp helm4 "$HELM4_VERSION"
}

# goreleaser, to check .goreleaser.yaml and build the release archives in tests.
build_goreleaser() {
  fresh goreleaser "$GORELEASER_VERSION" && return
  log "building goreleaser $GORELEASER_VERSION (about 10 minutes on a cold cache)"
  GOBIN="$bin" go install -trimpath -ldflags "-s -w" "github.com/goreleaser/goreleaser/v2@$GORELEASER_VERSION"
  stamp goreleaser "$GORELEASER_VERSION"
}

# The parity corpus's charts (PARITY_CHARTS), copied out of their Go
# modules: go mod download fetches each module once into the module cache.
build_charts() {
  local share="$tools_dir/share/charts"
  local want
  want=$(printf '%s' "$PARITY_CHARTS" | sha256sum | cut -c1-16)
  [[ -f "$share/.version" && "$(cat "$share/.version")" == "$want" ]] && return
  log "copying the parity corpus's charts out of their modules (seconds to a minute on an empty module cache)"
  rm -rf "$share" && mkdir -p "$share"
  local entry name ref mod folder dir
  for entry in $PARITY_CHARTS; do
    name=${entry%%=*} ref=${entry#*=}
    mod=${ref%%:*} folder=${ref#*:}
    dir=$(cd "$src" && go mod download -json "$mod" | sed -n 's/.*"Dir": "\(.*\)",*/\1/p')
    [[ -f "$dir/$folder/Chart.yaml" ]] || { echo "tools: $mod has no chart in $folder" >&2; exit 1; }
    cp -r "$dir/$folder" "$share/$name"
  done
  chmod -R u+w "$share"
  printf '%s\n' "$want" >"$share/.version"
}

# gremlins, for make mutation only.
build_gremlins() {
  fresh gremlins "$GREMLINS_VERSION" && return
  log "building gremlins $GREMLINS_VERSION (about 1 minute on a cold cache)"
  GOBIN="$bin" go install -trimpath -ldflags "-s -w" "github.com/go-gremlins/gremlins/cmd/gremlins@$GREMLINS_VERSION"
  stamp gremlins "$GREMLINS_VERSION"
}

build() {
  case "$1" in
    gremlins) build_gremlins ;;
    charts) build_charts ;;
    goreleaser) build_goreleaser ;;
    helm) build_helm ;;
    kwok) build_kwok ;;
    istioctl) build_istioctl ;;
    helmfile) build_helmfile ;;
    helm4) build_helm4 ;;
    etcd) build_etcd ;;
    kubernetes | kube-apiserver | kube-controller-manager | kube-scheduler) build_kubernetes ;;
    kubectl) build_kubectl ;;
    *) echo "tools: unknown tool $1" >&2; exit 2 ;;
  esac
}

if (($# == 0)); then set -- etcd kubernetes kubectl helm kwok istioctl helmfile helm4 goreleaser charts; fi
for t in "$@"; do build "$t"; done
log "ready in $bin"
