# dlbridge developer commands. `make test` is what CI runs (.ci/run).
SHELL := /bin/bash
CARGO ?= cargo

.PHONY: tour test guide wheels test-wheels wheels-quick gpu-kit lint free-threaded-check rust-test package-check miri sanitize fuzz-smoke fuzz fuzz-python fuzz-python-extension fuzz-python-smoke soak bench doc venv python-build python-test browser stubtest example-build example-c bench-python bench-peers bench-distributed bench-claims bench-compare bench-safetensors

VENV ?= .venv
PYTHON := $(VENV)/bin/python

## Under CI (a clean clone, every crate built once) cargo's incremental caches cost time and
## disk and are never reused.
ifeq ($(CI),true)
export CARGO_INCREMENTAL := 0
endif

## The core crate's features: ndarray and cudarc, and the bridges to the Rust libraries users
## hold tensors in (one folder each in crates/dlbridge/src). All of them are built and tested
## together, in one cargo invocation, so that their dependencies compile once.
BRIDGES := nalgebra faer image burn candle arrow
comma := ,
CORE_FEATURES := $(subst $(eval) ,$(comma),$(addprefix dlbridge/,ndarray cudarc safetensors $(BRIDGES)))
## dlbridge-pyo3's features of the same names: the bridges in kernels (typed arguments as the
## libraries' values, and their values returned).
PYO3_BRIDGE_FEATURES := $(subst $(eval) ,$(comma),$(addprefix dlbridge-pyo3/,$(BRIDGES)))

## The main job: the Rust tour (export, import, validate, print), a NumPy -> dlbridge ->
## PyTorch round trip through the Python package, NumPy, PyTorch and JAX tensors through Ray's
## object store and Dask's workers with dlbridge as the serializer (about 17 s), the example
## kernels on NumPy, PyTorch and JAX, TVM's compiled matmul through dlbridge on NumPy, PyTorch, JAX and MXNet tensors (MXNet
## in its own environment, made by scripts/mxnet-env.sh), then `dlbridge check` on every
## installed framework, whose HTML report is written to target/check-report.html (the path is
## printed at the end). The check's exit status 1 only says that a framework breaks a MUST
## rule, crashes or could not be checked completely (the report shows which); 2 or more is an
## error.
tour: python-build example-build
	$(CARGO) run --example tour
	$(PYTHON) python/examples/round_trip.py
	$(PYTHON) python/examples/distributed_exchange.py
	$(PYTHON) examples/matmul/demo.py
	$(PYTHON) examples/matmul/compiled_graphs.py
	$(PYTHON) examples/tensor_libraries/demo.py
	VENV=$(VENV) bash scripts/mxnet-env.sh
	$(PYTHON) examples/tvm_matmul/demo.py
	mkdir -p target
	$(PYTHON) -m dlbridge check --html target/check-report.html; status=$$?; \
		echo "dlbridge check: the HTML report is $(abspath target/check-report.html)"; \
		[ $$status -le 1 ]

## Every test: formatting, lints, the free-threaded (3.14t) type check, unit/integration/doc
## tests (with the ABI check against the real dlpack.h, fetched from the apache-tvm-ffi
## wheel), the published crates as packaged (scripts/package-check.sh), Miri where it is
## installed, the sanitizers, the fuzzers' smoke runs (Rust and Python targets, under two
## minutes together), the Python suite against real frameworks, and the quick form of the release
## wheels' test (wheels-quick).
## Each stage is timed (scripts/timed-stages.sh): the table at the end shows where the CI
## budget goes. Two stages run two targets at once, the second's output printed when both
## have ended (and kept in target/test-logs): the fuzzers' smoke runs beside the sanitizers
## (`sanitize+fuzz-smoke`) and Miri beside the Python suite (`python-test+miri`). Once built,
## each of them keeps about one core busy (one fuzzer, one Python process, one interpreting
## Miri at a time), and CI has two.
TEST_STAGES := lint free-threaded-check rust-test sanitize+fuzz-smoke python-test+miri fuzz-python-smoke wheels-quick
test:
	@bash scripts/timed-stages.sh "$(MAKE)" $(TEST_STAGES)

## The release: manylinux2014 wheels into target/wheels (x86_64, and aarch64 cross-built by
## Zig where `rustup target add aarch64-unknown-linux-gnu` was run), stripped and without the
## test kernels: one per version for CPython 3.9 and 3.10 and one cp311-abi3 wheel for 3.11+
## (one per version for each CPython found while crates/dlbridge-python has no feature
## `abi3`), and the sdist beside them. The tools (maturin, ziglang, auditwheel: pinned in
## python/requirements-wheels.txt) go into target/wheel-tools/venv. scripts/build-wheels.sh.
wheels:
	bash scripts/build-wheels.sh

## The wheels of target/wheels in a fresh virtual environment of each CPython 3.9-3.13 found,
## with NumPy from PyPI: `auditwheel show` (manylinux2014 or older), a NumPy round trip both
## ways without a copy and `dlbridge check dlbridge` (scripts/wheel_smoke.py); the sdist must
## build a wheel that passes too. The aarch64 cp311-abi3 wheel runs the same smoke test on
## Debian's arm64 CPython 3.11 and NumPy under qemu-user-static (scripts/arm64-python.sh,
## which needs root and Debian's registry). Ends with a table of the wheels. Under CI=true,
## fails unless two versions or more were tested. scripts/test-wheels.sh.
test-wheels:
	bash scripts/test-wheels.sh

## `make test`'s quick form of the two above: the abi3 wheels only (or the oldest and newest
## version's without the feature), x86_64 and aarch64 (its Rust target added under CI), with
## the cargo profile `wheel-quick` (no LTO), into target/wheels-quick, tested the same way,
## the aarch64 one under qemu (about 100 s more: 60 s to cross-build, 10 s to unpack the
## arm64 interpreter, 26 s of smoke test under emulation); no sdist.
wheels-quick:
	bash scripts/build-wheels.sh --quick
	bash scripts/test-wheels.sh --quick

## What a GPU machine (no Rust, no network) needs for the GPU tests and benchmark, into
## target/gpu-kit: the cp312 wheels of dlbridge (with the test kernels) and of the CUDA
## example, apache-tvm-ffi's wheel, the Rust GPU tests as one binary, the API documentation's
## CUDA examples as programs (crates/*/examples; scripts/gpu-kit.sh).
## There, beside the working tree: `bash scripts/gpu-run.sh` (here: `--dry-run`).
gpu-kit:
	bash scripts/gpu-kit.sh

## A local virtual environment with the test dependencies (re-installed when the list changes).
## A framework without wheels for this platform or Python is left out by its environment
## marker, with a note, and its tests are skipped; under CI on Linux x86_64 that is an error.
venv: $(VENV)/.installed
$(VENV)/.installed: python/requirements-test.txt
	test -x $(PYTHON) || python3 -m venv $(VENV)
	$(PYTHON) -m pip install --quiet --upgrade pip
	$(PYTHON) -m pip install --quiet -r python/requirements-test.txt
	$(PYTHON) scripts/requirements-notes.py python/requirements-test.txt
	touch $@

## Under CI the extensions the tests load are built with Cargo's default release profile
## (no LTO, 16 codegen units), the profile users build their own crates with: the tests check
## behaviour, not speed, and the project's whole-program optimization (fat LTO, one codegen
## unit) costs minutes of CI's two cores for each extension. The release wheels keep it
## (`make wheels`), and `make tour` and the benchmarks build with it outside CI.
ifeq ($(CI),true)
EXTENSION_PROFILE := CARGO_PROFILE_RELEASE_LTO=off CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16
endif

## The extension module, built in release mode into the virtual environment, with the test
## suite's kernels (the cargo feature `testing`: `dlbridge._dlbridge._testing`), which the
## wheels of `maturin build` leave out.
python-build: venv
	$(EXTENSION_PROFILE) PYO3_BUILD_EXTENSION_MODULE=1 VIRTUAL_ENV=$(abspath $(VENV)) \
		$(VENV)/bin/maturin develop --release --quiet --features testing

## The example extensions: examples/matmul (one Rust kernel for NumPy, PyTorch and JAX),
## examples/cuda_saxpy, and examples/tensor_libraries (burn, candle, nalgebra, faer and Arrow
## beside NumPy and PyTorch; a debug build, which reuses the libraries `make rust-test` built:
## an optimized build of candle, burn and Arrow takes minutes on two cores, and buys nothing
## for a demo of small tensors).
example-build: venv
	$(EXTENSION_PROFILE) PYO3_BUILD_EXTENSION_MODULE=1 VIRTUAL_ENV=$(abspath $(VENV)) \
		$(VENV)/bin/maturin develop --release --quiet -m examples/matmul/Cargo.toml
	$(EXTENSION_PROFILE) PYO3_BUILD_EXTENSION_MODULE=1 VIRTUAL_ENV=$(abspath $(VENV)) \
		$(VENV)/bin/maturin develop --release --quiet -m examples/cuda_saxpy/Cargo.toml
	PYO3_BUILD_EXTENSION_MODULE=1 VIRTUAL_ENV=$(abspath $(VENV)) \
		$(VENV)/bin/maturin develop --quiet -m examples/tensor_libraries/Cargo.toml

## The end-to-end C example (examples/c_interop): a C producer's tensors read in Rust and Rust
## tensors written by a C consumer, the C compiled by the cc crate against the real dlpack.h:
## the virtual environment's apache-tvm-ffi copy (as DLPACK_INCLUDE_DIR) when it is installed,
## else the header build.rs finds (examples/c_interop/README.md).
example-c:
	@package=$$(test -x $(PYTHON) && $(PYTHON) -c 'import importlib.util as u; \
		s = u.find_spec("tvm_ffi"); \
		print(s.submodule_search_locations[0] if s and s.submodule_search_locations else "")' \
		2>/dev/null); \
	if [ -n "$$package" ] && [ -f "$$package/include/dlpack/dlpack.h" ]; then \
		echo "example-c: DLPACK_INCLUDE_DIR=$$package/include"; \
		DLPACK_INCLUDE_DIR="$$package/include" $(CARGO) run -p dlbridge-c-interop; \
	else \
		echo "example-c: no apache-tvm-ffi in $(VENV) (make venv); dlpack.h as build.rs finds it"; \
		$(CARGO) run -p dlbridge-c-interop; \
	fi

## Debian's Chromium for the HTML report's browser test (python/tests/test_check_html.py: a
## headless screenshot, the DOM after the page's script ran, its console), installed with
## apt-get (as root, else with sudo) where `chromium` is missing: about 10 s, 120 MB fetched and
## 400 MB on disk, without the recommended packages (headless Chromium does without them).
## Without apt-get it says so; the test then skips, except under CI, where this fails first.
browser:
	@if command -v chromium >/dev/null 2>&1; then \
		echo "browser: $$(command -v chromium)"; \
	elif command -v apt-get >/dev/null 2>&1; then \
		sudo=""; [ "$$(id -u)" = 0 ] || sudo=sudo; \
		$$sudo apt-get update -q && \
		$$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
			--no-install-recommends chromium; \
	else \
		echo "browser: no chromium and no apt-get: install Chromium for test_check_html.py"; \
		[ "$$CI" != true ]; \
	fi

## Under CI (or PYTHON_TESTS_STRICT=1) every skip fails its run unless its reason is on the
## allow-list of python/tests/_skips.py (no GPU here; off Linux x86_64, a framework without a
## wheel or a test of another operating system), read from each run's JUnit report
## (scripts/python-tests.sh, which prints each run's counts and the number that ran in all).
## MXNet's tests run in an environment of their own, made first (scripts/mxnet-env.sh: CPython
## 3.11 in target/mxnet-venv with python/requirements-mxnet.txt); a failure to make it fails.
python-test: python-build example-build stubtest browser
	VENV=$(VENV) bash scripts/mxnet-env.sh
	PYTHON=$(PYTHON) PYTHON_TESTS_STRICT=$(if $(filter true,$(CI)),1,0) \
		bash scripts/python-tests.sh

## The type stubs (python/dlbridge/__init__.pyi) against the built extension: mypy's stubtest,
## pinned in python/requirements-test.txt, configured by pyproject.toml's [tool.mypy]. Its
## allowlist holds only what stubtest cannot understand, each entry with its reason. The
## private extension module `dlbridge._dlbridge` has no stub of its own (the package's stub
## types what it re-exports), so its test-only submodule `_testing` is not checked, with or
## without the feature `testing`.
stubtest: python-build
	$(PYTHON) -m mypy.stubtest --mypy-config-file pyproject.toml \
		--allowlist python/stubtest-allowlist.txt dlbridge

## Formatting and lints: rustfmt (the workspace, and the fuzz crate outside it), the import
## rules (no cycle in any crate or Python package, the layers of dlbridge-pyo3:
## scripts/module-layers.py), clippy on every feature (but
## `abi3`: WORKSPACE_FEATURES) and then on the extension module as its wheels build it
## (without the feature `testing`), which must be warning-free too; the published crates'
## API documentation, warning-free (broken intra-doc links included) with each feature
## alone, none and all (DOC_FEATURE_SETS: a link valid only with one feature breaks docs.rs
## readers' builds without it); ruff (format, then lints; its configuration is
## pyproject.toml's [tool.ruff]) for the Python code.
PYTHON_SOURCES := python benches scripts examples fuzz/python
DOC_FEATURE_SETS := dlbridge: dlbridge:ndarray dlbridge:cudarc dlbridge:ndarray,cudarc \
	dlbridge:safetensors dlbridge:$(subst $(eval) ,$(comma),$(BRIDGES)) dlbridge-pyo3: dlbridge-pyo3:cuda \
	dlbridge-pyo3:$(subst $(eval) ,$(comma),$(BRIDGES))
lint: venv
	$(CARGO) fmt --all -- --check
	cd fuzz && $(CARGO) fmt -- --check
	python3 scripts/module-layers.py
	$(CARGO) clippy --workspace --all-targets $(WORKSPACE_FEATURES) -- -D warnings
	$(CARGO) clippy -p dlbridge-python --all-targets -- -D warnings
	@for set in $(DOC_FEATURE_SETS); do \
		crate=$${set%%:*}; features=$${set#*:}; \
		echo "cargo doc -p $$crate --no-deps --features '$$features'"; \
		RUSTDOCFLAGS="-D warnings" $(CARGO) doc --quiet -p $$crate --no-deps \
			--features "$$features" || exit 1; \
	done
	$(VENV)/bin/ruff format --check $(PYTHON_SOURCES)
	$(VENV)/bin/ruff check $(PYTHON_SOURCES)

## `cargo check` of dlbridge-pyo3 (tests included), the extension module and the example
## extension against free-threaded CPython 3.14t (Py_GIL_DISABLED), described to PyO3 by a
## config file since no 3.14t interpreter is installed: every `#[cfg(Py_GIL_DISABLED)]` path
## must compile without warnings. Its own target directory: target/free-threaded.
free-threaded-check:
	CARGO="$(CARGO)" bash scripts/free-threaded-check.sh

## Every feature of the workspace but dlbridge-python's `abi3`, which would switch PyO3 (and
## so every crate of the build) to the limited API: the default build is the one tested and
## linted here, the abi3 builds by scripts/abi3-check.sh.
WORKSPACE_FEATURES := --features $(CORE_FEATURES),$(PYO3_BRIDGE_FEATURES),dlbridge-pyo3/cuda,dlbridge-python/testing

## Unit, integration and doc tests, the doc tests' `compile_fail` error codes checked
## (scripts/rustdoc-error-codes.sh: stable rustdoc ignores them), then their counts per binary
## and in all, and the ignored tests judged (scripts/rust-test-counts.py: only GPU tests and the
## ThreadSanitizer canary may be, each run elsewhere); the limited-API (abi3) builds (scripts/abi3-check.sh:
## dlbridge-pyo3's tests and clippy under pyo3/abi3-py39, `cargo check` of the extension
## module's feature `abi3`); then the published crates as crates.io would get them
## (scripts/package-check.sh: `cargo publish --dry-run` of dlbridge and dlbridge-pyo3, and the
## doc tests of each unpacked package, which must need no file outside it; the MSRV check).
rust-test:
	@mkdir -p target
	set -o pipefail; RUSTDOC="$(CURDIR)/scripts/rustdoc-error-codes.sh" \
		$(CARGO) test --workspace $(WORKSPACE_FEATURES) 2>&1 | tee target/rust-test.log
	python3 scripts/rust-test-counts.py target/rust-test.log
	CARGO="$(CARGO)" bash scripts/abi3-check.sh
	CARGO="$(CARGO)" bash scripts/package-check.sh

package-check:
	CARGO="$(CARGO)" bash scripts/package-check.sh

## The unsafe core under Miri (skipped with a note where the nightly Miri component is missing
## and cannot be added; under CI=true that fails: scripts/missing-tool.sh),
## every feature (the library bridges run their dependencies' code under Miri too: nalgebra,
## faer, image, burn-std, candle, arrow) with strict provenance, then again with Tree Borrows
## (no rebuild), and the core with ndarray, cudarc and safetensors on 32-bit i686 (Miri builds
## that target's std itself: the core's layouts and arithmetic on 4-byte pointers, without an
## installed i686 toolchain; safetensors because its reader takes a file's extents and offsets
## into usize, which is narrower there: about 20 s more; the bridges are left out there, as
## rebuilding their dependencies for a second target costs minutes and their code has no
## pointer-width arithmetic of its own). The doc tests (the API's examples, each a program Miri
## builds and interprets on its own) run in the first pass only: the second and third take the
## unit and integration tests, which hold every unsafe path, and leave CI minutes for the rest.
miri:
	@$(CARGO) +nightly miri --version >/dev/null 2>&1 || \
		rustup component add --toolchain nightly miri rust-src >/dev/null 2>&1 || true
	@if $(CARGO) +nightly miri --version >/dev/null 2>&1; then \
		MIRIFLAGS="-Zmiri-strict-provenance" $(CARGO) +nightly miri test -p dlbridge --all-features && \
		MIRIFLAGS="-Zmiri-strict-provenance -Zmiri-tree-borrows" \
			$(CARGO) +nightly miri test -p dlbridge --all-features --lib --tests && \
		MIRIFLAGS="-Zmiri-strict-provenance" \
			$(CARGO) +nightly miri test -p dlbridge --features ndarray,cudarc,safetensors \
			--target i686-unknown-linux-gnu --lib --tests; \
	else \
		bash scripts/missing-tool.sh miri "not installed (rustup +nightly component add miri)"; \
	fi

## AddressSanitizer and LeakSanitizer (nightly `-Zsanitizer=address`): the Rust tests of the
## core and of dlbridge-pyo3 (the latter embed Python, with PYTHONMALLOC=malloc so that the
## interpreter's objects are tracked and scanned as well), then the Python exchange tests
## against an ASan-built extension (scripts/sanitize-python.sh, with a canary that proves the
## instrumentation works). The library bridges are left out (their unsafe code runs under Miri,
## and building their dependencies with the sanitizer costs minutes). Then ThreadSanitizer on
## the aliasing registry (scripts/sanitize-threads.sh: its claim/release stress on eight
## threads and the aliasing tests, after a canary race the sanitizer must report; it needs the
## nightly rust-src component, which it adds where it is missing). Skipped with a note where the
## nightly toolchain is missing; under CI=true that fails (scripts/missing-tool.sh).
SANITIZE_TRIPLE := x86_64-unknown-linux-gnu
sanitize: venv
	@if $(CARGO) +nightly --version >/dev/null 2>&1 && [ "$$(uname -m)" = x86_64 ]; then \
		PYTHONMALLOC=malloc ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 \
		RUSTFLAGS="-Zsanitizer=address -Cforce-frame-pointers=yes" \
		CARGO_TARGET_DIR=target/sanitize/tests \
			$(CARGO) +nightly test -p dlbridge -p dlbridge-pyo3 \
			--features dlbridge/ndarray,dlbridge/cudarc,dlbridge-pyo3/cuda \
			--target $(SANITIZE_TRIPLE) --lib --tests && \
		PYTHON=$(PYTHON) bash scripts/sanitize-python.sh && \
		CARGO="$(CARGO)" TRIPLE=$(SANITIZE_TRIPLE) bash scripts/sanitize-threads.sh; \
	else \
		bash scripts/missing-tool.sh sanitize "needs the nightly toolchain on x86_64"; \
	fi

## Fuzzing (cargo-fuzz / libFuzzer, nightly, AddressSanitizer; fuzz/fuzz_targets): hostile
## DLPack descriptors through import, validation, every view and ndarray (import_descriptor),
## the exact overlap test of the aliasing registry against a brute-force search of every byte
## (overlap), and the producer side: every kind of export, legacy and versioned, through
## chains of shares, copies and raw hand-overs (exports), and safetensors files: hostile
## headers through the reader, every accepted file's tensors exported, read and written back
## (safetensors). `fuzz-smoke` runs each of FUZZ_TARGETS for FUZZ_SMOKE_SECONDS (20) from its
## seeds in fuzz/seeds, installing cargo-fuzz when it is missing, and is skipped with a note
## where the nightly toolchain or cargo-fuzz is not there (under CI=true that fails:
## scripts/missing-tool.sh);
## `make fuzz FUZZ_SECONDS=3600` (or `FUZZ_TARGETS=overlap`) is the long run, and
## `FUZZ_SANITIZER=none` runs it uninstrumented by ASan (eight times the executions; panics,
## debug assertions and the oracles still hold). AddressSanitizer's allocator returns NULL for
## a request it cannot give, as the system's does (allocator_may_return_null), so that
## `Error::OutOfMemory` is tested rather than the sanitizer's own abort. The growing corpora
## stay in fuzz/corpus (not tracked); ROBUSTNESS.md keeps the campaign's record.
FUZZ_SECONDS ?= 30
FUZZ_SMOKE_SECONDS ?= 20
FUZZ_SANITIZER ?= address
FUZZ_TARGETS ?= import_descriptor overlap exports safetensors
fuzz-smoke: FUZZ_SECONDS = $(FUZZ_SMOKE_SECONDS)
fuzz-smoke fuzz:
	@if $(CARGO) +nightly --version >/dev/null 2>&1; then \
		$(CARGO) fuzz --version >/dev/null 2>&1 || $(CARGO) install --quiet --locked cargo-fuzz \
			|| { bash scripts/missing-tool.sh $@ "cargo-fuzz could not be installed"; exit $$?; }; \
		cd fuzz && for target in $(FUZZ_TARGETS); do \
			echo "fuzz: $$target, $(FUZZ_SECONDS) s"; \
			mkdir -p corpus/$$target seeds/$$target && \
			ASAN_OPTIONS=allocator_may_return_null=1 \
			$(CARGO) +nightly fuzz run -s $(FUZZ_SANITIZER) $$target corpus/$$target \
				seeds/$$target -- -max_total_time=$(FUZZ_SECONDS) -timeout=10 \
				-rss_limit_mb=2048 -print_final_stats=1 2>&1 | grep -v "^#[0-9]"; \
			status=$${PIPESTATUS[0]}; [ $$status -eq 0 ] || exit $$status; \
		done; \
	else \
		bash scripts/missing-tool.sh $@ "the nightly toolchain is not installed"; \
	fi

## The Python-level fuzzers (atheris; fuzz/python/fuzz.py TARGET): capsules and producers,
## `from_dlpack`'s keywords and typed kernel arguments (capsules), distributed frames and
## pickle arguments (rebuild). `fuzz-python` is the long run, FUZZ_SECONDS per target, against
## the extension built a second time (fuzz-python-extension: target/atheris) with LLVM's
## SanitizerCoverage, debug assertions and overflow checks, so that the Rust branches an input
## reaches guide the search; corpora grow in fuzz/corpus/python_TARGET (not tracked), findings
## go to fuzz/artifacts/python_TARGET. `fuzz-python-smoke`, in `make test`, runs each target
## for FUZZ_PYTHON_SMOKE_SECONDS (15) from its seeds against the extension of `python-build`
## (skipped with a note where atheris has no wheel, an error under CI).
PYTHON_FUZZ_TARGETS ?= capsules rebuild
FUZZ_PYTHON_SMOKE_SECONDS ?= 15
ATHERIS_RUSTFLAGS := -Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=3 \
	-Cllvm-args=-sanitizer-coverage-inline-8bit-counters \
	-Cllvm-args=-sanitizer-coverage-pc-table -Cllvm-args=-sanitizer-coverage-trace-compares \
	-Cdebug-assertions -Coverflow-checks
fuzz-python-extension: venv
	$(eval HOST := $(shell rustc -vV | sed -n 's/^host: //p'))
	$(eval SUFFIX := $(shell $(PYTHON) -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))'))
	PYO3_BUILD_EXTENSION_MODULE=1 PYO3_PYTHON=$(abspath $(PYTHON)) \
		CARGO_TARGET_DIR=target/atheris CARGO_PROFILE_RELEASE_LTO=off \
		RUSTFLAGS="$(ATHERIS_RUSTFLAGS)" $(CARGO) build --quiet --release --target $(HOST) \
		-p dlbridge-python --features testing
	rm -rf target/atheris/package && mkdir -p target/atheris/package
	cp -r python/dlbridge target/atheris/package/
	rm -f target/atheris/package/dlbridge/_dlbridge*.so
	cp target/atheris/$(HOST)/release/lib_dlbridge.so target/atheris/package/dlbridge/_dlbridge$(SUFFIX)

fuzz-python: fuzz-python-extension
	@for target in $(PYTHON_FUZZ_TARGETS); do \
		echo "fuzz-python: $$target, $(FUZZ_SECONDS) s"; \
		mkdir -p fuzz/corpus/python_$$target fuzz/artifacts/python_$$target; \
		DLBRIDGE_FUZZ_EXTENSION=target/atheris/package $(PYTHON) fuzz/python/fuzz.py $$target \
			fuzz/corpus/python_$$target fuzz/seeds/python_$$target \
			-max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=2048 \
			-print_final_stats=1 -artifact_prefix=fuzz/artifacts/python_$$target/ 2>&1 \
			| grep -v "^#[0-9]\|^INFO: Instrumenting"; \
		status=$${PIPESTATUS[0]}; [ $$status -eq 0 ] || exit $$status; \
	done

fuzz-python-smoke: python-build
	@if ! $(PYTHON) -c "import atheris" 2>/dev/null; then \
		if [ "$$CI" = true ]; then echo "fuzz-python-smoke: atheris is missing"; exit 1; fi; \
		echo "fuzz-python-smoke: atheris has no wheel here (python/requirements-test.txt); skipped"; \
		exit 0; \
	fi; \
	for target in $(PYTHON_FUZZ_TARGETS); do \
		echo "fuzz-python-smoke: $$target, $(FUZZ_PYTHON_SMOKE_SECONDS) s"; \
		rm -rf target/fuzz-smoke/$$target && mkdir -p target/fuzz-smoke/$$target; \
		$(PYTHON) fuzz/python/fuzz.py $$target target/fuzz-smoke/$$target \
			fuzz/seeds/python_$$target -max_total_time=$(FUZZ_PYTHON_SMOKE_SECONDS) \
			-timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
			-artifact_prefix=target/fuzz-smoke/ 2>&1 | grep -v "^#[0-9]\|^INFO: Instrumenting"; \
		status=$${PIPESTATUS[0]}; [ $$status -eq 0 ] || exit $$status; \
	done

## The long soak: the leak tests with 1,000,000 exchanges each (CI runs them with 100,000),
## and the load across two extension modules (python/tests/test_load.py) with 1,000 threads
## of 10,000 calls each (CI runs 40 of 400), bounded by DLBRIDGE_LOAD_SECONDS (900).
soak: python-build example-build
	DLBRIDGE_SOAK_EXCHANGES=1000000 $(PYTHON) -m pytest -q -p no:cacheprovider \
		python/tests/test_leaks.py
	DLBRIDGE_LOAD_THREADS=1000 DLBRIDGE_LOAD_CALLS=10000 $(PYTHON) -m pytest -q -s \
		-p no:cacheprovider python/tests/test_load.py

## Criterion benchmarks, then their medians as the Markdown table of BENCHMARKS.md.
bench:
	$(CARGO) bench -p dlbridge-benches
	python3 benches/criterion_medians.py

## The Python side-by-side benchmark (dlbridge, NumPy, PyTorch, tvm-ffi, nanobind, dlpark;
## dlbridge's extension as the project builds it and as a user's crate is built), then the
## kernels as users build them beside rust-numpy's (default profile and fat LTO):
## BENCHMARKS.md. `benches/instructions.py` counts those kernels' instructions per call
## (valgrind). The run is also kept as JSON (target/bench/python_exchange.json) and drawn by
## benches/chart.py (matplotlib, python/requirements-test.txt) into docs/benchmarks-python.png,
## the chart BENCHMARKS.md shows.
bench-python: python-build example-build bench-peers
	$(PYTHON) benches/python_exchange.py --json target/bench/python_exchange.json
	$(PYTHON) benches/chart.py target/bench/python_exchange.json docs/benchmarks-python.png

## What the aliasing registry's claims cost, printed (not asserted): an import with its claim,
## and typed arguments' registrations beside 0, 100 and 1,000 live imports
## (crates/dlbridge-pyo3/tests/import_claims.rs, its one ignored test), in a release build.
bench-claims: venv
	PYTHONPATH="$$($(PYTHON) -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" \
		$(CARGO) test --release -p dlbridge-pyo3 --test import_claims -- --ignored --nocapture

## A safetensors file of 1 GiB into PyTorch: `dlbridge.safetensors.load` beside the
## `safetensors` package's `load_file`, each load in a fresh interpreter, interleaved; time and
## the resident memory each adds, before and after every page is read (BENCHMARKS.md,
## "safetensors files"). The file is made once, in target/bench.
bench-safetensors: python-build
	$(PYTHON) benches/safetensors_load.py

## Large tensors through Ray (one node, and between the two nodes of a local test cluster) and
## Dask (a LocalCluster): Ray's and Dask's own paths for NumPy and PyTorch beside dlbridge's
## serializer (dlbridge.distributed) on NumPy, PyTorch and JAX, interleaved; time and the peak
## memory each step adds (BENCHMARKS.md, "Beyond one process").
bench-distributed: python-build
	$(PYTHON) benches/distributed_transfer.py

## The peer extensions the benchmark compares with (nanobind from PyPI, dlpark and rust-numpy
## from crates.io, and a hand-written C++ floor against the installed torch), and the same
## kernels written with dlbridge-pyo3 and with rust-numpy in crates of their own, each built
## as a user's crate is (cargo's default release profile) and with the workspace's (fat LTO,
## `--lto`), and dlbridge's own extension and the matmul example built with cargo's default
## release profile too (beside the installed build, fat LTO), into target/peers/python; not
## part of the project or its tests.
bench-peers: venv
	PYTHON=$(PYTHON) bash benches/peers/nanobind/build.sh
	PYTHON=$(PYTHON) bash benches/peers/build-cargo-peer.sh dlpark
	PYTHON=$(PYTHON) bash benches/peers/build-cargo-peer.sh rust-numpy
	PYTHON=$(PYTHON) bash benches/peers/build-cargo-peer.sh rust-numpy --lto
	PYTHON=$(PYTHON) bash benches/peers/build-cargo-peer.sh dlbridge-user
	PYTHON=$(PYTHON) bash benches/peers/build-cargo-peer.sh dlbridge-user --lto
	PYTHON=$(PYTHON) bash benches/peers/torch_floor/build.sh
	PYTHON=$(PYTHON) bash benches/peers/xla_floor/build.sh
	PYTHON=$(PYTHON) bash benches/peers/build-dlbridge-default-profile.sh

## dlbridge's exchange and argument paths in the working tree against commit BASE
## (`make bench-compare BASE=0744a74`), both built with the test kernels in the workspace's
## profile (fat LTO) and in cargo's default release profile, all four timed in one interleaved
## run (benches/compare_builds.py; the builds by benches/build-at-commit.sh, under
## target/compare): a Markdown table of each path per build and the change against BASE in the
## same profile, also kept as JSON (target/compare/compare.json). BENCHMARKS.md, "What the
## safety checks cost".
bench-compare: venv
	@test -n "$(BASE)" || { echo "make bench-compare BASE=COMMIT: the commit to compare with" >&2; exit 2; }
	PYTHON=$(PYTHON) bash benches/build-at-commit.sh $(BASE) target/compare/builds/base
	PYTHON=$(PYTHON) bash benches/build-at-commit.sh WORKTREE target/compare/builds/worktree
	$(PYTHON) benches/compare_builds.py --json target/compare/compare.json \
		--against after-lto:before-lto --against after-default:before-default \
		before-lto=target/compare/builds/base/lto after-lto=target/compare/builds/worktree/lto \
		before-default=target/compare/builds/base/default \
		after-default=target/compare/builds/worktree/default

doc:
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --workspace $(WORKSPACE_FEATURES) --no-deps

## The user guide (docs/guide, an mdBook) as HTML, into target/guide (docs/guide/book.toml's
## build-dir): target/guide/index.html. mdBook is installed from crates.io into target/tools
## the first time (`cargo install --locked`, a minute or two). Not part of `make test`, which
## runs the guide's examples instead: its Rust blocks as doc tests (each crate's
## src/guide_doctests.rs), its Python blocks in python/tests/test_guide.py.
MDBOOK := target/tools/bin/mdbook
guide:
	@test -x $(MDBOOK) || $(CARGO) install --quiet --locked --root target/tools mdbook
	$(MDBOOK) build docs/guide
