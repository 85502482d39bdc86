# dlbridge developer commands. `make test` is what CI runs (.ci/run).
SHELL := /bin/bash
CARGO ?= cargo

.PHONY: tour test lint rust-test miri bench doc

## The main job: a runnable tour (export, import, validate, print).
tour:
	$(CARGO) run --example tour

## Every test: formatting, lints, unit/integration/doc tests (with the ABI check against the
## real dlpack.h, fetched from the apache-tvm-ffi wheel), and Miri where it is installed.
test: lint rust-test miri

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets --all-features -- -D warnings

rust-test:
	$(CARGO) test --workspace --all-features

## The unsafe core under Miri (skipped with a note where the nightly Miri component is missing).
miri:
	@$(CARGO) +nightly miri --version >/dev/null 2>&1 || \
		rustup component add --toolchain nightly miri >/dev/null 2>&1 || true
	@if $(CARGO) +nightly miri --version >/dev/null 2>&1; then \
		MIRIFLAGS="-Zmiri-strict-provenance" $(CARGO) +nightly miri test -p dlbridge --all-features && \
		MIRIFLAGS="-Zmiri-strict-provenance -Zmiri-tree-borrows" \
			$(CARGO) +nightly miri test -p dlbridge --all-features; \
	else \
		echo "miri: not installed (rustup +nightly component add miri); skipped"; \
	fi

## Criterion benchmarks, then their medians as the Markdown table of BENCHMARKS.md.
bench:
	$(CARGO) bench -p dlbridge-benches
	python3 benches/criterion_medians.py

doc:
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --workspace --all-features --no-deps
