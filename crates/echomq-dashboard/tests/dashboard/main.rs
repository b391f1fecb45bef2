//! The dashboard's router and server against real servers (on both wires
//! where a page reads the queue), one test program: each module was its
//! own program before issue 39 (every program links the whole dependency
//! tree; one is faster to build and smaller in target/). A real browser
//! drives `emq dashboard` in the emq crate's `tests/dashboard_browser/`.
//!
//! Run one former program with a filter on its module, e.g.
//! `cargo test -p echomq-dashboard --test dashboard -- hardening::`.

mod common;

mod api;
mod bad_records;
mod connections;
mod controls_page;
mod hardening;
mod job_page;
mod live;
mod queue_page;
mod safety;
mod tokens;
