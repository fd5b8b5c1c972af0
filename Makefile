# The two commands the README starts with are `make run` and `make test`;
# everything else here is a convenience around them.
GO ?= go

.PHONY: run test lab-build build vet fmt bench

# run: the main job on the lab (builds the lab's binaries on first use).
run:
	$(GO) run ./cmd/repro run --scenario apiserver-rollout

# test: the whole suite. The lab's kube-apiserver and etcd are built first, in
# the open with a progress bar (about 5 minutes cold, cached afterwards), so
# the tests themselves never sit silent behind a build.
test: lab-build
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed on:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) test -race -timeout 45m ./...

lab-build:
	$(GO) run ./cmd/repro lab build

build:
	$(GO) build -o bin/repro ./cmd/repro

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./prober/ ./report/
