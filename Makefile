# dshtrace — the two commands a new user needs are `make run` and `make test`.
GO       ?= go
SHARED   ?= ../shared
BIN      := bin
FUZZTIME ?= 5s

.PHONY: all build run test vet fmt-check unit fuzz bench clean

all: build

build:
	$(GO) build -o $(BIN)/dshtrace ./cmd/dshtrace

# Until the collector distribution exists, `make run` runs the CLI over the
# seed sample log of the format reference.
run: build
	$(BIN)/dshtrace turns testdata/seed/sample.jsonl
	$(BIN)/dshtrace check testdata/seed/sample.jsonl

# The full suite: vet and formatting, unit and corpus conformance tests,
# then a brief pass of every fuzz target.
test: fmt-check vet unit fuzz

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

unit:
	DSH_CORPUS=$(abspath $(SHARED))/dsh-corpus $(GO) test -count=1 ./...

fuzz:
	@for t in $$($(GO) test -list '^Fuzz' ./sessionlog | grep '^Fuzz'); do \
		echo "fuzz $$t ($(FUZZTIME))"; \
		$(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) ./sessionlog || exit 1; \
	done

bench:
	./bench/codec.sh

clean:
	rm -rf $(BIN)
