#!/usr/bin/env bash
# Runs the Argo CD end-to-end module (e2e-argocd/): helm-inject's plugin
# through Argo CD's own cmp-server and repo-server code, on the test control
# plane. Argo CD v3.6 needs Go 1.27; only this module uses it, through the
# Go module proxy's approved toolchain (the main module stays on the
# machine's Go). The control plane binaries come from hack/tools.sh.
set -euo pipefail
export GOTOOLCHAIN=go1.27.3
cd "$(dirname "$0")/../e2e-argocd"
go vet ./...
go test -count=1 -timeout 20m "$@" ./...
