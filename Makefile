# The README's commands. Each sets up what it needs in .venv first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
SOURCES := $(shell find crates python -name '*.rs' -o -name '*.py' -o -name '*.pyi' -o -name Cargo.toml) Cargo.toml Cargo.lock pyproject.toml

.PHONY: nightly cargo-fuzz
.PHONY: demo test lint docs test-wheel test-neon bench-codec bench-sim bench-report bench-wifi fuzz miri sanitize mutants clean

demo: $(STAMP)
	$(BIN)/ncmesh reproduce honc2012 --quick --out demo-out

test: lint
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
	bash .ci/test-neon
	$(MAKE) docs

# The gates every change passes: formatting, lints, types, API docs.
lint: $(STAMP)
	cargo fmt --all -- --check
	cd fuzz && cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -q -- -D warnings
	RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --workspace -q
	$(BIN)/ruff format --check -q python tests tools
	$(BIN)/ruff check -q python tests tools
	$(BIN)/mypy
	$(BIN)/python -m mypy.stubtest ncmesh._native --mypy-config-file pyproject.toml

# The documentation site, into site/: the Rust API from cargo doc beside the
# pages, broken links and anchors failing the build.
docs: $(STAMP)
	RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --workspace -q
	rm -rf docs/rust && cp -r target/doc docs/rust
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

# The release wheel installed into a fresh environment and run outside the checkout.
test-wheel: $(STAMP)
	PYTHON=$(PYTHON) bash .ci/test-wheel

# Every kernel tier this CPU runs, each against its peers forced to the same
# tier; ISA-L comes from Debian (libisal-dev).
bench-codec: $(STAMP)
	@ldconfig -p | grep -q 'libisal\.so\.2' || (apt-get update -qq && apt-get install -y -qq libisal-dev) >/dev/null 2>&1 \
		|| echo "ISA-L could not be installed from Debian's packages: the tables will have no ISA-L rows"
	$(BIN)/python -m pip install -q galois
	cargo bench -p ncmesh-codec --bench codec
	$(BIN)/python -m ncmesh.bench_codec

# The NEON tier against the scalar reference, and the codecs on it, on
# AArch64 under qemu-user with Debian's cross toolchain (part of `make test`).
test-neon:
	bash .ci/test-neon

# ns-3 from PyPI (its wheel builds cppyy: a C++ compiler and about 6 minutes).
bench-sim: $(STAMP)
	$(BIN)/python -m pip install -q ns3
	$(BIN)/python -m ncmesh.bench_sim

# A 1000-run sweep (resumed if it is already there), then the size of its report and
# the time Chromium takes to draw it.
bench-report: $(STAMP)
	$(BIN)/ncmesh sweep sweeps/report-1000.toml --db target/bench/report-1000.sqlite
	$(BIN)/python -m ncmesh.bench_report target/bench/report-1000.sqlite --out target/bench/report-1000.html

bench-wifi: $(STAMP)
	$(BIN)/python -m pip install -q ns3
	$(BIN)/ncmesh bench wifi

FUZZ_TARGETS := wire_parse decoder_consume lt_consume scenario_load tcp_segments packet_parse tcpnc_messages \
	honc_frames tcpforward_messages

# The nightly toolchain with Miri and the standard library's source, and
# cargo-fuzz, installed if missing (an installed nightly is kept as it is).
NIGHTLY := nightly
nightly:
	@rustup component list --toolchain $(NIGHTLY) --installed 2>/dev/null | grep -q '^miri' \
		&& rustup component list --toolchain $(NIGHTLY) --installed | grep -q '^rust-src' \
		|| rustup toolchain install $(NIGHTLY) --profile minimal --component miri --component rust-src
cargo-fuzz: nightly
	@command -v cargo-fuzz >/dev/null || cargo install --locked cargo-fuzz

fuzz: cargo-fuzz
	cd fuzz && for t in $(FUZZ_TARGETS); do cargo +$(NIGHTLY) fuzz run $$t -- -max_total_time=600 || exit 1; done

# gf's tests under Miri, which checks every memory access (bounds,
# alignment, initialisation, aliasing) and every unsafe operation: the
# scalar tier and the portable code (M4RM, the sliced rows) on short rows,
# and tests that would take minutes ignored with their reason; the vector
# tiers are left to `make sanitize`. Then codec's tests of its unsafe code
# (the aligned symbol buffers) and of what drives it: the decoder, the
# packed rows, XOR, and the fuzz harnesses on a few dozen inputs each.
# Its other tests are safe code over the same kernels, for minutes each.
# Each step stops after MIRI_LIMIT.
MIRI_LIMIT := 45m
MIRI_CODEC_TESTS := rlnc:: xor:: wire::tests::fuzz_harnesses_run_clean_on_a_sample
miri: nightly
	cargo +$(NIGHTLY) miri setup
	nice timeout $(MIRI_LIMIT) cargo +$(NIGHTLY) miri test -p ncmesh-gf --lib
	nice timeout $(MIRI_LIMIT) cargo +$(NIGHTLY) miri test -p ncmesh-codec --lib -- $(MIRI_CODEC_TESTS)

# AddressSanitizer over the tests of gf and codec, every kernel tier this
# CPU has (each against the scalar reference, rows between guard bytes),
# then each fuzz target for SANITIZE_SECONDS (cargo-fuzz builds with ASan),
# and the codec's two targets again on each x86 vector tier below the
# fastest (NCMESH_GF_ISA). The tests build for the host named as a target,
# so that the sanitizer stays out of build scripts and proc-macros.
SANITIZE_SECONDS := 30
HOST = $(shell rustc -vV | sed -n 's/^host: //p')
SANITIZE_TIERS := ssse3 avx2 avx512 gfni256
ASAN := RUSTFLAGS="-Zsanitizer=address"
sanitize: cargo-fuzz
	$(ASAN) nice cargo +$(NIGHTLY) test --target $(HOST) \
		--target-dir target/asan -p ncmesh-gf -p ncmesh-codec --lib --tests
	cd fuzz && for t in $(FUZZ_TARGETS); do \
		nice cargo +$(NIGHTLY) fuzz run $$t -- -max_total_time=$(SANITIZE_SECONDS) || exit 1; done
	cd fuzz && for isa in $(SANITIZE_TIERS); do for t in decoder_consume lt_consume; do \
		NCMESH_GF_ISA=$$isa nice cargo +$(NIGHTLY) fuzz run $$t -- -max_total_time=$(SANITIZE_SECONDS) || exit 1; done; done

# Mutation testing, one area at a time (docs/testing.md has the report).
# An area is the files it mutates, the tests that judge them and a time
# limit; the limits add up to MUTANTS_BUDGET on 2 cores. Surviving mutants
# are reported, not failed on: mutmut_area.py prints them, and cargo-mutants
# writes them to target/mutants/AREA/mutants.out/missed.txt. An area fails
# when its unmutated tests fail or it overruns its limit.
# `make mutants-honc` runs one area.
MUTANTS_BUDGET := 4 hours
MUTANTS_AREAS := models store honc decoder tcp gf
mutants-models-limit := 30m
mutants-store-limit := 20m
mutants-honc-limit := 60m
mutants-decoder-limit := 40m
mutants-tcp-limit := 60m
mutants-gf-limit := 30m
# cargo-mutants arguments of the Rust areas: the package, the files, and the
# test targets to build and run (-C reaches the build as well as the run).
mutants-honc-args := -p ncmesh-proto -f 'crates/proto/src/honc/*.rs' -C --lib -C --test=honc_chain
mutants-decoder-args := -p ncmesh-codec -f crates/codec/src/rlnc/decoder.rs -C --lib -C --test=rlnc
mutants-tcp-args := -p ncmesh-proto -f crates/proto/src/tcp/sender.rs -f crates/proto/src/tcp/recovery.rs \
	-f crates/proto/src/tcp/sack.rs -f crates/proto/src/tcp/rtt.rs -f crates/proto/src/tcp/newreno.rs \
	-f crates/proto/src/tcp/prr.rs -f crates/proto/src/tcp/rack.rs -C --lib -C --test=fast_retransmit \
	-C --test=newreno_partial_ack -C --test=rto_backoff -C --test=sack_recovery -C --test=delivery -C --test=prr -C --test=rack \
	-C --test=linux_rto -C --test=bbr -C --test=delivery_rate -C --test=ns3_loss -C --test=handshake -C --test=abort \
	-C --test=duplicate_acks -C --test=ack_credit
mutants-gf-args := -p ncmesh-gf -C --lib

.PHONY: $(addprefix mutants-,$(MUTANTS_AREAS))
mutants: $(addprefix mutants-,$(MUTANTS_AREAS))

mutants-models mutants-store: mutants-%: $(STAMP)
	$(BIN)/python -m pip install -q "mutmut>=3.8,<4"
	nice timeout $(mutants-$*-limit) $(BIN)/python tools/mutmut_area.py $*

# cargo-mutants exits 2 for missed mutants and 3 for timeouts: reported, so not errors here.
mutants-honc mutants-decoder mutants-tcp mutants-gf: mutants-%:
	command -v cargo-mutants >/dev/null || cargo install --locked cargo-mutants
	mkdir -p target/mutants
	nice timeout $(mutants-$*-limit) cargo mutants -o target/mutants/$* $(mutants-$*-args) \
		|| { status=$$?; [ $$status -eq 2 ] || [ $$status -eq 3 ]; }

$(STAMP): $(SOURCES)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q "maturin>=1.7,<2" "pytest>=8" "hypothesis>=6" \
		"numpy>=1.24" "typer>=0.12,<0.29" "rich>=13" "pandas>=2" "pyarrow>=15" "pydantic>=2.6" "matplotlib>=3.7" \
		"scipy>=1.10" "cvxpy>=1.4" "duckdb>=1" "dask[distributed]>=2024.1" "tabulate>=0.9" \
		"ruff>=0.15,<0.18" "mypy>=2.4,<2.5" "pandas-stubs>=3.1,<3.2" "mkdocs-material>=9.5" "mkdocstrings[python]>=0.26" \
		"plotly>=5.15" "playwright>=1.45"
	VIRTUAL_ENV=$(abspath $(VENV)) $(BIN)/maturin develop --profile dist -q
	touch $@

clean:
	rm -rf $(VENV) target site docs/rust
