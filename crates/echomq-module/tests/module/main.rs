//! The native module in real servers, one test program: each module was
//! its own program before issue 39 (every program links the whole
//! dependency tree; one is faster to build and smaller in target/). Build
//! the module first: `cargo build -p echomq-module`.
//!
//! Run one former program with a filter on its module, e.g.
//! `cargo test -p echomq-module --test module -- differential::`.
//! scripts/test runs `acl::`, `bad_input::`, `differential::` and
//! `persistence::` again on Redis 7.0 (module.rs says why not `module::`).

mod common;

mod acl;
mod bad_input;
mod differential;
mod module;
mod persistence;
mod publish;
mod replica_order;
