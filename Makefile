# The two set-up commands of the README: `make demo` and `make test`. Both install what they need.
BUILD ?= build
JOBS ?= $(shell nproc)
export CCACHE_BASEDIR := $(CURDIR)

.PHONY: setup build demo test unit differential bench bench-check pdsh clean

setup:
	@TUG_BUILD_DIR=$(abspath $(BUILD)) bash scripts/setup.sh

$(BUILD)/build.ninja: CMakeLists.txt
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release

build: setup $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

demo: build
	@bash scripts/demo.sh $(BUILD)

unit: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) --timeout 600

differential: build
	TUG_BUILD_DIR=$(abspath $(BUILD)) .venv/bin/python -m pytest -q tests/differential tests/python
	# again with every spillable table on disk whenever it is not in use, the CPU's joins, aggregates,
	# unique and windows split into hash buckets, under a 16 MiB memory_limit (docs/options.md)
	TUG_MEMORY_LIMIT=16MiB TUG_SPILL_EVERYTHING=1 TUG_FORCE_EXTERNAL=1 TUG_BUILD_DIR=$(abspath $(BUILD)) .venv/bin/python -m pytest -q tests/differential
	# again with every case on ranks: each seed's cases on 1, 2, 3 or 4 (mpirun --oversubscribe; docs/architecture.md,
	# "Multi-rank execution")
	TUG_DIFFTEST_RANKS=1,2,3,4 TUG_BUILD_DIR=$(abspath $(BUILD)) .venv/bin/python -m pytest -q tests/differential

test: unit differential

bench: build
	@bash scripts/bench.sh $(BUILD)

# The benchmark guard (docs/benchmarks.md): PDS-H SF1 on the CPU engine with DuckDB and Polars, and the core
# micro-benchmarks, compared with the last committed results of this kind of machine. By hand, never in CI.
bench-check: build
	.venv/bin/python bench/check.py --build $(BUILD)

# PDS-H, the 22 queries in tug (every engine the build has), DuckDB and Polars on this machine's cores;
# data generated into bench/data/pdsh-sf$(PDSH_SF) once; results under bench/results/<date>-pdsh-sf*/.
PDSH_SF ?= 1
PDSH_REPS ?= 3
pdsh: build
	.venv/bin/python bench/pdsh.py --sf $(PDSH_SF) --reps $(PDSH_REPS) --build $(BUILD)

clean:
	rm -rf $(BUILD)
