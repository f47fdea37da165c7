# The README's commands. Each sets up what it needs in .venv first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
SOURCES := $(shell find crates python -name '*.rs' -o -name '*.py' -o -name '*.pyi' -o -name Cargo.toml) Cargo.toml Cargo.lock pyproject.toml

.PHONY: demo test test-wheel bench-codec bench-sim fuzz clean

demo: $(STAMP)
	$(BIN)/ncmesh reproduce honc2012 --quick --out demo-out

test: $(STAMP)
	@# The report test renders HTML in a headless browser; it skips if none can be had.
	@command -v chromium >/dev/null || (apt-get update -qq && apt-get install -y -qq chromium) >/dev/null 2>&1 \
		|| echo "chromium could not be installed: the report rendering test will skip"
	@# ncmesh emulate's tests run ping and iperf3 in namespaces; they skip where these are missing.
	@command -v iperf3 >/dev/null && command -v ping >/dev/null \
		|| (apt-get update -qq && apt-get install -y -qq iperf3 iputils-ping) >/dev/null 2>&1 \
		|| echo "iperf3 or ping could not be installed: the emulation tests that need them will skip"
	cargo test --workspace --exclude ncmesh-py
	$(BIN)/python -m pytest -q -W error tests
	PYTHON=$(PYTHON) bash .ci/test-wheel

# The release wheel installed into a fresh environment and run outside the checkout.
test-wheel: $(STAMP)
	PYTHON=$(PYTHON) bash .ci/test-wheel

bench-codec: $(STAMP)
	$(BIN)/python -m pip install -q galois raptorq
	cargo bench -p ncmesh-codec --bench codec
	$(BIN)/python -m ncmesh.bench_codec

# ns-3 from PyPI (its wheel builds cppyy: a C++ compiler and about 6 minutes).
bench-sim: $(STAMP)
	$(BIN)/python -m pip install -q ns3
	$(BIN)/python -m ncmesh.bench_sim

fuzz:
	cd fuzz && for t in wire_parse decoder_consume lt_consume scenario_load tcp_segments packet_parse tcpnc_messages honc_frames; do \
		cargo +nightly fuzz run $$t -- -max_total_time=600 || exit 1; done

$(STAMP): $(SOURCES)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q "maturin>=1.7,<2" "pytest>=8" "hypothesis>=6" \
		"numpy>=1.24" "typer>=0.12,<0.29" "rich>=13" "pandas>=2" "pyarrow>=15" "pydantic>=2.6" "matplotlib>=3.7" \
		"scipy>=1.10" "cvxpy>=1.4" "duckdb>=1" "dask[distributed]>=2024.1" "tabulate>=0.9"
	VIRTUAL_ENV=$(abspath $(VENV)) $(BIN)/maturin develop --release -q
	touch $@

clean:
	rm -rf $(VENV) target
