# dshtrace — the two commands a new user needs are `make run` and `make test`.
GO       ?= go
BIN      := bin
FUZZTIME ?= 5s

.PHONY: all build run test test-full vet fmt-check unit race fuzz bench clean \
	tools generate check-generated otelcol-dsh demo e2e soak deploy-test corpus

all: build

build:
	$(GO) build -o $(BIN)/dshtrace ./cmd/dshtrace

# Build the collector distribution and run it on its built-in configuration.
# It listens on three addresses, each moved by a variable (docs/operating.md, "Ports"):
#   localhost:4320 HTTP ingest          OTELCOL_DSH_HTTP_ENDPOINT
#   localhost:8889 turn metrics         OTELCOL_DSH_METRICS_ENDPOINT
#   localhost:8888 the collector's own  OTELCOL_DSH_TELEMETRY_ENDPOINT
# and tails $DSH_HOME/sessions (~/.dsh/sessions), printing the finished turns.
# A taken address is one line before anything starts.
run: otelcol-dsh
	$(OTELCOL)

# The real dsh session logs the conformance tests read, looked for like
# internal/testcorpus does: $DSH_CORPUS (taken as it is: the environment is
# passed through, never overridden), else ../shared/dsh-corpus beside the
# repository, else .corpus/dsh-corpus (what `make corpus` fetches). Without
# one those tests skip; with CI=true they fail.
CORPUS_FOUND := $(or $(DSH_CORPUS),$(wildcard $(abspath $(CURDIR)/..)/shared/dsh-corpus),$(wildcard $(CURDIR)/.corpus/dsh-corpus))
CORPUS_LINE  := $(if $(CORPUS_FOUND),corpus: $(CORPUS_FOUND),no dsh corpus - conformance tests skipped; to run them set DSH_CORPUS, put one at ../shared/dsh-corpus, or run make corpus)

# The quick suite (a few minutes): formatting, vet, and every package's
# tests — unit, the repository's own testdata logs, and the corpus
# conformance tests when a corpus is found. One line per stage.
test: fmt-check vet citations unit

# Everything: the quick suite, then the collector components under the race
# detector and a brief pass of every fuzz target. CI runs this (.ci/run).
test-full: test race fuzz

fmt-check:
	@echo "== gofmt"
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	@echo "== vet"
	@$(GO) vet ./...
	@cd cmd/otelcol-dsh && $(GO) vet ./internal/...

# Code and READMEs cite only the repository's own docs/ (existing sections).
.PHONY: check-citations citations
check-citations citations:
	@echo "== citations"
	@tools/check-citations.sh --self-test
	@tools/check-citations.sh

# cmd/otelcol-dsh is a module of its own: its hand-written packages
# (internal/) are tested from there.
unit:
	@echo "== unit ($(CORPUS_LINE))"
	@$(GO) test -count=1 ./...
	@cd cmd/otelcol-dsh && $(GO) test -count=1 ./internal/...

# The collector components again under the race detector.
race:
	@echo "== race ($(CORPUS_LINE))"
	@$(GO) test -race -count=1 ./connector/... ./processor/... ./receiver/... ./exporter/... ./internal/logrecord/... ./sessionlog/turnmodel/...

# Fetch the corpus's public fixtures at their pinned commits into
# .corpus/dsh-corpus (git-ignored); needs git and the network
# (tools/corpus.sh says what it can and cannot reproduce).
corpus:
	tools/corpus.sh .corpus/dsh-corpus

# Every fuzz target of the module, each for FUZZTIME.
FUZZ_PKGS ?= ./sessionlog ./cmd/dshtrace/internal/replay ./sessionlog/internal/jsontape ./receiver/sessionevent/internal/httpsource \
	./exporter/sessionarchive/internal/archive ./sessionlog/sessionroot ./extension/dshencoding

fuzz:
	@echo "== fuzz ($(FUZZTIME) per target)"
	@GO=$(GO) FUZZTIME=$(FUZZTIME) tools/fuzz.sh $(FUZZ_PKGS)

# Benchmarks (BENCHMARKS.md). bench: the codec, dshtrace against a filelog
# pipeline on the same files (full size) and the collector's memory as
# sessions grow and turns stay open. bench-quick: the comparison at a small
# size (minutes, the distributions cached), ending with the line
# `throughput ratio dshtrace/filelog: X.XX`. bench-floor: the contract floor
# (two bare parses per row and the pdata of the outputs) against the
# pipeline, in CPU µs per event (bench/floor.sh).
.PHONY: bench-quick bench-vsfilelog bench-scale bench-dists bench-floor
bench: bench-dists
	./bench/codec.sh
	GO=$(GO) ./bench/floor.sh
	GO=$(GO) ./bench/vsfilelog.sh full
	GO=$(GO) ./bench/scale.sh

bench-quick: bench-dists
	GO=$(GO) ./bench/vsfilelog.sh quick

# turn_state's sampling at session_ratio RATIO (default 0.1) against 1 on the
# bench-quick corpus: spans exported, CPU per event, peak RSS (bench/sampling.sh).
.PHONY: bench-sampling
bench-sampling: bench-dists
	GO=$(GO) ./bench/sampling.sh

bench-vsfilelog: bench-dists
	GO=$(GO) ./bench/vsfilelog.sh full

bench-scale: bench-dists
	GO=$(GO) ./bench/scale.sh

bench-floor:
	GO=$(GO) ./bench/floor.sh

# The Kafka tier as shipped, on kfake with a 2 ms broker round trip: journal
# off and on, 1 to 3 turn-state instances (bench/scaleout.sh).
.PHONY: bench-scaleout
bench-scaleout: otelcol-dsh
	GO=$(GO) ./bench/scaleout.sh

# The three ways events reach turn_state on one corpus and one downstream,
# interleaved: the file tail, HTTP ingest, and the Kafka two-tier deployment
# on kfake (both tiers' CPU); ends with `CPU per event, HTTP/files: X.XX` and
# `CPU per event, Kafka/files: X.XX` (bench/paths.sh; PROFILE=dir for CPU
# profiles and their top).
.PHONY: bench-paths
bench-paths: bench-dists
	GO=$(GO) ./bench/paths.sh

# The two bench distributions (ocb, cached under bin/bench/).
bench-dists:
	GO=$(GO) ./bench/build.sh >/dev/null

clean:
	rm -rf $(BIN)

# ---- the otelcol-dsh distribution, the real backends, the deploy kit ----
#
# The pinned tools (Jaeger v2, Prometheus 3.16 and promtool, ocb, a fake
# Kafka) are built once into $DSH_TOOLS_CACHE (~/.cache/dshtrace-tools),
# keyed by version and go.mod/go.sum, and reused by every later run
# (tools/build.sh, tools/README.md).
OTELCOL  := $(BIN)/otelcol-dsh
TOOLS    := tools/build.sh
GOBUILD_ENV := GOTOOLCHAIN=local GOFLAGS=-buildvcs=false CGO_ENABLED=0

tools:
	$(TOOLS) >/dev/null

# Regenerate cmd/otelcol-dsh/ from builder-config.yaml (ocb, from the
# repository root; default_config.go and internal/ there are hand-written and
# kept), gofmt'd like the rest of the tree.
generate:
	eval "$$($(TOOLS) ocb)" && $(GOBUILD_ENV) "$$OCB" --config builder-config.yaml --skip-compilation
	gofmt -w cmd/otelcol-dsh/*.go

# Fail when the committed cmd/otelcol-dsh/ differs from what ocb generates.
check-generated: generate
	@git diff --exit-code --stat -- cmd/otelcol-dsh || \
		{ echo "cmd/otelcol-dsh is stale: run 'make generate' and commit the result"; exit 1; }
	@new=$$(git ls-files --others --exclude-standard -- cmd/otelcol-dsh); \
		if [ -n "$$new" ]; then echo "not committed: $$new"; exit 1; fi

# The distribution binary (a nested module: built on its own).
otelcol-dsh:
	cd cmd/otelcol-dsh && $(GOBUILD_ENV) $(GO) build -trimpath -ldflags="-s -w" -o $(abspath $(OTELCOL)) .

# Real Jaeger (with its web UI: $$JAEGER_UI_ASSETS or ../shared/jaeger-ui) and
# Prometheus on loopback with the collector, testdata sessions replayed and
# their replay pages served (dshtrace serve); prints links to the turns and
# runs until interrupted. exec: a kill of make reaches the script, which
# stops everything it started.
demo: otelcol-dsh build
	OTELCOL_DSH=$(abspath $(OTELCOL)) DSHTRACE=$(abspath $(BIN)/dshtrace) exec e2e/demo.sh

# The end-to-end suite on real Jaeger v2 and Prometheus 3 (e2e/), and the
# replay pages in headless Chromium (TestReplayPages).
e2e: otelcol-dsh build
	eval "$$($(TOOLS))" && export JAEGER PROMETHEUS PROMTOOL KFAKE && \
	echo "== e2e ($(CORPUS_LINE))" && \
	OTELCOL_DSH=$(abspath $(OTELCOL)) DSHTRACE=$(abspath $(BIN)/dshtrace) $(GO) test -tags e2e -count=1 -timeout 15m -v ./e2e/

# The soak: the fault tests of `make e2e`, longer (DSH_SOAK=1), each with
# its seed printed (DSH_SOAK_SEED, DSH_FULLDISK_SEED, DSH_OUTAGE_SEED, …
# reproduce them): otelcol-dsh killed at 200 random instants while 30 tailed
# and 10 HTTP live sessions flow (DSH_SOAK_KILLS sets the count), the state
# directory full three times for a minute, Jaeger away for ten minutes,
# every state file damaged, and the Kafka broker restarted.
DSH_SOAK_KILLS ?= 200
SOAK_TESTS ?= TestRandomKill|TestFullDisk|TestLongOutage|TestDamagedState|TestBrokerRestart
soak: otelcol-dsh
	eval "$$($(TOOLS))" && export JAEGER KFAKE && \
	OTELCOL_DSH=$(abspath $(OTELCOL)) DSH_SOAK=1 DSH_SOAK_KILLS=$(DSH_SOAK_KILLS) \
		$(GO) test -tags e2e -count=1 -timeout 90m -v -run '^($(SOAK_TESTS))$$' ./e2e/

# The deploy kit on its own: promtool on the rules and their unit tests, the
# dashboard's JSON, and every example collector config validated by the
# distribution.
deploy-test: otelcol-dsh
	eval "$$($(TOOLS) prometheus)" && \
		"$$PROMTOOL" check rules deploy/rules.yaml && \
		"$$PROMTOOL" test rules deploy/rules_test.yaml
	jq -e '(.title|type=="string") and (.uid|type=="string") and (.panels|length > 0)' \
		deploy/grafana/dshtrace-dashboard.json >/dev/null
	for f in deploy/collector/*.yaml; do \
		HOSTNAME=validate $(OTELCOL) validate --config=$$f || exit 1; \
	done
