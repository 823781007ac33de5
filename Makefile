# The two commands a newcomer runs (see README.md):
#   make demo   inject sidecars into a bundled chart: offline first, then on a local control plane
#   make test   everything CI runs: tools, go vet, unit and integration tests
#
# Both build the real components they need (hack/tools.sh) the first time
# (the demo after it has shown the offline result),
# into the user's cache folder (~/.cache/helm-inject/tools, or
# $HELM_INJECT_TOOLS_DIR), shared by every clone; later runs reuse them.

GO ?= go
# 75 minutes: on a machine with an empty Go build cache the e2e package also
# cross-compiles the release archives of four other platforms from nothing
# (TestReleaseArchives: 29 minutes of a fresh clone's first run, on a
# machine shared with a mutation run, where 45 minutes were not enough).
GOTEST_FLAGS ?= -count=1 -timeout 75m

.PHONY: demo test tools vet unit fuzz cluster build bench bench-helmfile clean-tools argocd-e2e mutation behaviour-mutants

# The demo shows the offline result first, then builds what it needs for
# the real install (the control plane and the helm CLI) itself.
demo:
	$(GO) run ./hack/demo

test: tools vet
	$(GO) test $(GOTEST_FLAGS) ./...
	bash hack/argocd-e2e.sh

tools:
	bash hack/tools.sh

vet:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.cache/*')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...

# The Argo CD module alone (Go 1.27 from the module proxy; part of test).
argocd-e2e: tools
	bash hack/argocd-e2e.sh

# Unit tests only: no control plane, no tools.
unit:
	$(GO) test -count=1 $$($(GO) list ./... | grep -v /e2e)

# Mutation testing (gremlins, one worker per core) on the core packages:
# writes docs/mutation.md and docs/mutation/*.json, then checks that every
# mutation docs/claims.md names still fails its test. About an hour on 2
# cores; not part of make test. Before a stop, the lines you changed only:
#   make mutation DIFF=origin/main        (or any base commit; prints only)
#   make mutation PKGS="release inject"   (some packages)
DIFF ?=
PKGS ?=
mutation: tools
	DIFF=$(DIFF) bash hack/mutation.sh $(PKGS)

# The behaviour catalogue (hack/mutants/*.yaml): hand-written plausible
# bugs, each applied to a fresh copy of the tree and killed by its
# package's unit tests. Not part of make test. One by name:
#   make behaviour-mutants NAME=confine-dev-null      (a regular expression)
NAME ?=
behaviour-mutants:
	$(GO) run ./hack/behaviour-mutants $(if $(NAME),-run '$(NAME)')

# The fuzz step: every fuzz target for FUZZTIME (default 1m) each.
fuzz:
	bash hack/fuzz.sh

# Start the test control plane by hand (Ctrl-C stops it).
cluster: tools
	$(GO) run ./hack/cluster

build:
	CGO_ENABLED=0 $(GO) build -trimpath -o bin/helm-inject .

# Side-by-side comparison with the helm CLI, chartify and --post-renderer;
# rewrites docs/performance.md, .svg and .json. About an hour on 2 CPUs, most
# of it installing 2,000 workloads; BENCH_SIZES=10,100,500 takes 15 minutes.
# Some methods only, printed and not saved: cd hack/bench && go run . -sizes 2000
#   -methods helm-template,hi-template-builtin
# Stage benchmarks: go test ./chartify ./inject ./release -run '^$$' -bench .
BENCH_SIZES ?= 10,100,500,2000
BENCH_ROUNDS ?= 5
bench:
	bash hack/tools.sh etcd kubernetes helm helm4
	cd hack/bench && $(GO) vet . && $(GO) run . -sizes $(BENCH_SIZES) -rounds $(BENCH_ROUNDS)

# The helmfile comparison: 10 and 30 releases of a 100-workload chart, with
# the helm 3 CLI as helmfile's helm (and sync with helm 4's too);
# rewrites its section of docs/performance.md.
BENCH_RELEASES ?= 10,30
BENCH_HF_WORKLOADS ?= 100
bench-helmfile:
	bash hack/tools.sh etcd kubernetes helm helm4 helmfile
	cd hack/bench && $(GO) vet . && $(GO) run . -helmfile $(BENCH_RELEASES) -hf-workloads $(BENCH_HF_WORKLOADS) -rounds $(BENCH_ROUNDS)

clean-tools:
	rm -rf "$${HELM_INJECT_TOOLS_DIR:-$${XDG_CACHE_HOME:-$$HOME/.cache}/helm-inject/tools}"
