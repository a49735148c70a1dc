//! The facade's tests under Node (`wasm-pack test --node`).
mod common;
