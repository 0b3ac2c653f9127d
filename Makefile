# The two commands a newcomer needs: `make run` and `make test`.
GO      ?= go
BIN     := bin/tair
PKGS    := ./...
# Packages whose tests run with the race detector (concurrent code).
# The redis-server comparison tests fail (not skip) when redis-server is missing.
export TAIR_REQUIRE_REDIS := 1

RACE_PKGS := ./cmd/... ./internal/... ./resp/... ./engines/... ./proxy/... ./dataserver/... ./configserver/... ./hotkey/...

.PHONY: all build run test test-unit test-race test-integration chaos fuzz fuzz-short lint bench bench-migration bench-recovery deps tools clean

all: build

deps:
	$(GO) mod download

build: deps
	$(GO) build -o $(BIN) ./cmd/tair

# A whole cluster on this machine: embedded etcd, a configserver,
# 3 dataservers (copy count 2) and a proxy on 127.0.0.1:6379.
run: build tools
	./$(BIN) up $(ARGS)

# Debian packages the tests and benchmarks drive (redis-cli, redis-benchmark,
# redis-server and twemproxy as anchors; nft for the chaos suite's network
# partitions; headless chromium for the console's browser test; redis-py
# for cluster-mode routing). Installed
# only when missing.
tools:
	@command -v redis-cli >/dev/null && command -v redis-benchmark >/dev/null && \
	  command -v redis-server >/dev/null && command -v nutcracker >/dev/null && command -v etcd >/dev/null && \
	  command -v nft >/dev/null || { \
	  echo "installing redis-tools, redis-server, nutcracker, etcd-server, nftables"; \
	  (apt-get update -qq || true) >/dev/null; \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-tools redis-server nutcracker etcd-server nftables >/dev/null; systemctl disable --now etcd >/dev/null 2>&1 || true; }
	@command -v chromium >/dev/null || { \
	  echo "installing chromium (the configserver console's browser test)"; \
	  (apt-get update -qq || true) >/dev/null; \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }
	@{ python3 -c 'import redis' || /usr/bin/python3 -c 'import redis'; } 2>/dev/null || { \
	  echo "installing python3-redis (redis-py in cluster mode against the proxies)"; \
	  (apt-get update -qq || true) >/dev/null; \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-redis >/dev/null; }

# Every test: vet, unit tests with the race detector, integration and fault
# tests on real processes, and a short bounded fuzz run.
test: deps tools lint-vet test-race test-integration fuzz-short
	@# The table builder's moves against the minimum (the ratio line); the
	@# exit status is go test's (dash, make's /bin/sh, has no pipefail).
	@out=$$($(GO) test -count=1 -run '^TestBuildProperties$$' -v ./configserver/schedule/ 2>&1); rc=$$?; \
	  printf '%s\n' "$$out" | grep -E 'ratio|racks|_test\.go:|^(ok|FAIL|---)'; exit $$rc

lint-vet:
	$(GO) vet $(PKGS)

test-unit:
	$(GO) test -count=1 -timeout 10m $(PKGS)

test-race:
	$(GO) test -race -count=1 -timeout 15m $$($(GO) list $(RACE_PKGS) 2>/dev/null)

# Integration and fault tests on real processes, the chaos suite
# (tests/chaos_test.go) in its short mode: each case once.
test-integration: build
	$(GO) test -count=1 -timeout 20m -p 1 ./tests/...

# The chaos suite's long mode: each case CHAOS_RUNS times in a row, the
# victims and timings drawn from seeds TAIR_CHAOS_SEED (default: the
# clock), +1, ...; every run logs the seed that replays it.
CHAOS_RUNS ?= 20
chaos: build tools
	TAIR_CHAOS_RUNS=$(CHAOS_RUNS) $(GO) test -count=1 -timeout 360m -p 1 -v -run '^TestChaos' ./tests/

# Go native fuzz targets, as target:package:budget. `make test` runs each
# for an execution budget (-fuzztime Nx), never for a duration: at a
# duration's deadline Go 1.26's fuzz coordinator can fail a clean run with
# "context deadline exceeded" (go.dev/issue/75804). The differential fuzzer
# against redis-server (tests/difffuzz) runs in its short mode with the
# integration tests; `make fuzz` runs every target, and the differential
# fuzzer, for FUZZTIME each (e.g. make fuzz FUZZTIME=10m).
FUZZ_TARGETS = FuzzRESPReader:./resp/:50000x FuzzProxy:./proxy/:2000x \
  FuzzExecRDB:./dataserver/exec/:3000x FuzzExecMDB:./dataserver/exec/:3000x \
  FuzzExecLDB:./dataserver/exec/:1000x FuzzExecKDB:./dataserver/exec/:300x \
  FuzzTableDecode:./internal/route/:20000x FuzzDecode:./engines/ldb/sortedkv/:20000x \
  FuzzDecodeItems:./engines/generic/:20000x FuzzDecodeObject:./engines/ds/:20000x \
  FuzzRestore:./dataserver/exec/:5000x FuzzIndex:./engines/generic/slab/:10000x \
  FuzzArena:./engines/generic/slab/:2000x
FUZZTIME ?= 2m

fuzz-short:
	@set -e; for t in $(FUZZ_TARGETS); do \
	  name=$${t%%:*}; rest=$${t#*:}; pkg=$${rest%%:*}; budget=$${rest#*:}; \
	  echo "fuzz $$name $$pkg -fuzztime $$budget"; \
	  $(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $$budget $$pkg; done

fuzz: build tools
	@set -e; for t in $(FUZZ_TARGETS); do \
	  name=$${t%%:*}; rest=$${t#*:}; pkg=$${rest%%:*}; \
	  echo "fuzz $$name $$pkg -fuzztime $(FUZZTIME)"; \
	  $(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) $$pkg; done
	@echo "difffuzz against redis-server for $(FUZZTIME)"
	TAIR_DIFFFUZZ_TIME=$(FUZZTIME) $(GO) test -count=1 -timeout 0 -run '^TestDiffFuzz$$' -v ./tests/difffuzz/

lint:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt needed"; exit 1; }
	$(GO) vet $(PKGS)

# Benchmarks: the cluster beside a plain redis-server and twemproxy, as
# interleaved ratios; Go benchmarks of the engines; the recovery of a lost
# dataserver (bench/recovery.sh). Results: bench/RESULTS.md.
bench: build tools
	bash bench/run.sh

# Online migration under load: 1,000,000 keys in 3 dataservers, a 4th
# joins; keys/s moved and client p99 before and during (bench/RESULTS.md).
bench-migration: build tools
	bash bench/migration.sh

# A dataserver lost under load: 4 dataservers, one holding ~1,000,000 key
# copies is killed (SIGKILL); the time until every bucket has its copies
# again, beside the aim (10 s), and client latency (bench/RESULTS.md).
bench-recovery: build tools
	bash bench/recovery.sh

clean:
	rm -rf bin
