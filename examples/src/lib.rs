//! Runnable examples of dlbridge live beside this crate as `examples/*.rs`; run `cargo run --example tour`.
