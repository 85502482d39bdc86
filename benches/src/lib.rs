//! Criterion benchmarks of dlbridge: `cargo bench -p dlbridge-benches`.
