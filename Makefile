# The two commands the README starts with are `make run` and `make test`;
# everything else here is a convenience around them.
GO ?= go

.PHONY: run test lab-build build vet fmt bench bench-vs-vegeta bench-vegeta

# run: the main job on the lab (builds the lab's binaries on first use).
run:
	$(GO) run ./cmd/repro run --scenario apiserver-rollout

# test: the whole suite, one package at a time: the lab and the end-to-end
# runs each start three kube-apiservers, and two at once on 2 cores would
# measure the machine, not repro. The lab's kube-apiserver and etcd are built first, in
# the open with a progress bar (about 5 minutes cold, cached afterwards), so
# the tests themselves never sit silent behind a build.
# go vet -race: vet builds its dependencies with the same flags as the tests,
# so on a cold machine both share one build cache.
test: lab-build
	$(GO) vet -race ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed on:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) test -race -p 1 -timeout 45m ./...

# lab-build also builds kube-apiserver v1.29.6 (OpenShift 4.16's Kubernetes),
# which the 1.29 rollout test runs; the one extra release CI builds.
lab-build:
	$(GO) run ./cmd/repro lab build --lab-kube-version v1.29.6

# build: -s -w drops the symbol table and DWARF (173 MB -> 123 MB); panics
# still print function names and lines (from pclntab), and `go version -m`
# still reads the build info. docs/prober-cost.md says what the rest is.
build:
	$(GO) build -ldflags="-s -w" -o bin/repro ./cmd/repro

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./prober/ ./report/write/

# bench-vs-vegeta: the prober against vegeta (in-process, same local TLS
# server in another process, 600 req/s over HTTP/1.1, half on new
# connections, both tools sending at the same instants, 20 s each in 1 s
# turns taken in ABBA order), three runs, about 2.5 minutes; prints latency,
# CPU, allocations, context switches, GC cycles and the machine's stolen
# time, and the ratios.
bench-vs-vegeta:
	$(GO) test -run '^$$' -bench BenchmarkVsVegeta -benchtime 1x -count 3 -timeout 10m ./prober/

# bench-vegeta: the `repro probe` process against two vegeta v12.13.0
# processes (built into the user cache dir on first use) at the same 600
# req/s, against one local TLS HTTP/1.1 target in a third process, in
# interleaved rounds; prints CPU per request, peak RSS and p50/p99 per
# connection type with the ratios, and checks that every request the target
# answered has its sample. See docs/prober-cost.md.
bench-vegeta:
	$(GO) run ./hack/benchvegeta $(BENCH_VEGETA_FLAGS)
