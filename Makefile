# The two commands a newcomer runs (see README.md):
#   make demo   inject sidecars into a bundled chart on a local control plane
#   make test   everything CI runs: tools, go vet, unit and integration tests
#
# Both build the real components they need (hack/tools.sh) into .cache/tools
# the first time; later runs reuse them.

GO ?= go
GOTEST_FLAGS ?= -count=1 -timeout 45m

.PHONY: demo test tools vet unit cluster build bench clean-tools

# The demo needs only the control plane and the helm CLI.
demo:
	bash hack/tools.sh etcd kubernetes helm kwok
	$(GO) run ./hack/demo

test: tools vet
	$(GO) test $(GOTEST_FLAGS) ./...

tools:
	bash hack/tools.sh

vet:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.cache/*')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...

# Unit tests only: no control plane, no tools.
unit:
	$(GO) test -count=1 $$($(GO) list ./... | grep -v /e2e)

# Start the test control plane by hand (Ctrl-C stops it).
cluster: tools
	$(GO) run ./hack/cluster

build:
	$(GO) build -o bin/helm-inject .

# Side-by-side comparison with the helm CLI, chartify and --post-renderer
# (about 15 minutes at these sizes); rewrites docs/performance.md and .svg.
# Stage benchmarks: go test ./chartify ./inject ./release -run '^$$' -bench .
BENCH_SIZES ?= 10,100,500
BENCH_ROUNDS ?= 5
bench:
	bash hack/tools.sh etcd kubernetes helm
	cd hack/bench && $(GO) vet . && $(GO) run . -sizes $(BENCH_SIZES) -rounds $(BENCH_ROUNDS)

clean-tools:
	rm -rf .cache/tools
