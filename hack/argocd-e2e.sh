#!/usr/bin/env bash
# Runs the Argo CD end-to-end module (e2e-argocd/): helm-inject's plugin
# through Argo CD's own cmp-server and repo-server code, on the test control
# plane. Argo CD v3.6 needs Go 1.27; only this module's test binary uses it,
# through the Go module proxy's approved toolchain. helm-inject itself, and
# the fixture injector, are built first with the machine's Go, as the main
# module's tests and releases build them (and from the same build cache, so
# nothing of helm-inject is compiled twice). The control plane binaries come
# from hack/tools.sh.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
(cd "$root" && go build -o "$bin/" . ./fixtures/injectors/sidecar-injector ./fixtures/injectors/escape-probe)
export HELM_INJECT_E2E_BIN=$bin
export GOTOOLCHAIN=go1.27.3
cd "$root/e2e-argocd"
go vet ./...
go test -count=1 -timeout 20m "$@" ./...
