# wattwatch — `make run` builds and triages the bundled demo; `make test` builds with ASan+UBSan
# (and `make dist`, whose tarball a test unpacks) and runs every test. Both install what they
# need first (scripts/install-deps.sh, apt only).
SHELL := /bin/bash
JOBS ?= $(shell nproc)
RELEASE := build/release
BENCH := build/bench
ASAN := build/asan
DEMO := out/demo

.PHONY: all deps build run test asan bench fuzz clean format format-check tidy package dist

all: build

deps:
	@./scripts/install-deps.sh

# The release build is the binary and what installs with it (man pages, completion): no tests, no
# benchmarks.
$(RELEASE)/build.ninja:
	cmake -S . -B $(RELEASE) -G Ninja -DCMAKE_BUILD_TYPE=Release -DWATTWATCH_TESTS=OFF -DWATTWATCH_BENCH=OFF

build: deps $(RELEASE)/build.ninja
	cmake --build $(RELEASE) -j $(JOBS)

# A .deb of the release build (cmake/package.cmake): build/release/packages/wattwatch_*.deb.
package: build
	cd $(RELEASE) && cpack -G DEB

# The portable tarball (cmake/deps.cmake, scripts/make-dist.sh): the binary linked statically
# against everything but glibc, with the units, rules, dashboards and man pages:
# build/dist/wattwatch-<version>-linux-<arch>.tar.gz. The full cpp-httplib header comes from
# Debian's source package of the installed version (scripts/dist-sources.sh).
DIST := build/dist
$(DIST)/build.ninja:
	cmake -S . -B $(DIST) -G Ninja -DCMAKE_BUILD_TYPE=Release -DWATTWATCH_PORTABLE=ON \
	  -DWATTWATCH_TESTS=OFF -DWATTWATCH_BENCH=OFF -DWATTWATCH_DIST_SOURCES=$(CURDIR)/build/dist-src

dist: deps
	./scripts/dist-sources.sh build/dist-src
	$(MAKE) $(DIST)/build.ninja
	cmake --build $(DIST) -j $(JOBS)
	./scripts/make-dist.sh $(DIST)

# The field report's job: 16 GPUs on 2 hosts, training, a rank-0 checkpoint, then an epoch-end
# NCCL hang. Simulate it, then triage it as a user would.
run: build
	@mkdir -p $(DEMO)
	$(RELEASE)/wattwatch simulate field-report --force --out-dir $(DEMO) --truth $(DEMO)/truth.csv --truth-json $(DEMO)/truth.json
	$(RELEASE)/wattwatch triage $(DEMO)/node0.csv $(DEMO)/node1.csv --json-out $(DEMO)/triage.json --labels $(DEMO)/labels.csv --html $(DEMO)/report.html
	@echo "JSON: $(DEMO)/triage.json  labels: $(DEMO)/labels.csv"
	@echo "HTML report: $(DEMO)/report.html (open it in a browser; works offline)"

# -O1 -g1: ASan's usual optimisation level and line tables for its stack traces. At -O2 -g a
# gtest+json+regex test file took 86 s to compile here, at -O1 -g1 48 s (CI has two cores).
ASAN_FLAGS := -O1 -g1 -DNDEBUG
$(ASAN)/build.ninja:
	cmake -S . -B $(ASAN) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWATTWATCH_SANITIZE=ON \
	  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$(ASAN_FLAGS)" -DCMAKE_C_FLAGS_RELWITHDEBINFO="$(ASAN_FLAGS)"

asan: deps $(ASAN)/build.ninja
	cmake --build $(ASAN) -j $(JOBS)

# The tests include the portable tarball's (tests/deploy/dist_test.py), so `make test` builds it.
# tests/ctest_costs.txt seeds ctest's cost data on a fresh clone (ctest keeps it current after),
# so the longest tests start first and none of them is left to run alone at the end.
test: asan dist
	mkdir -p $(ASAN)/Testing/Temporary
	[ -f $(ASAN)/Testing/Temporary/CTestCostData.txt ] || \
	  cp tests/ctest_costs.txt $(ASAN)/Testing/Temporary/CTestCostData.txt
	cd $(ASAN) && WATTWATCH_REQUIRE_DIST=1 ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --output-on-failure -j $(JOBS)

$(BENCH)/build.ninja:
	cmake -S . -B $(BENCH) -G Ninja -DCMAKE_BUILD_TYPE=Release -DWATTWATCH_TESTS=OFF -DWATTWATCH_BENCH=ON

bench: deps $(BENCH)/build.ninja
	cmake --build $(BENCH) -j $(JOBS)
	./bench/run_all.sh $(BENCH)

fuzz: deps
	cmake -S . -B build/fuzz -G Ninja -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
	  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWATTWATCH_FUZZ=ON -DWATTWATCH_TESTS=OFF
	cmake --build build/fuzz -j $(JOBS)

format:
	clang-format -i $$(git ls-files '*.cc' '*.h')

# Fails when a tracked C++ file is not clang-formatted (run by .ci/run before the tests).
format-check:
	clang-format --dry-run --Werror $$(git ls-files '*.cc' '*.h')

# clang-tidy over the library and the app with .clang-tidy's checks (needs a configured build
# for compile_commands.json).
tidy: $(ASAN)/build.ninja
	run-clang-tidy -quiet -p $(ASAN) -j $(JOBS) "$$(pwd)/(src|apps)/.*\.cc$$"

clean:
	rm -rf build out
