//! The dashboard in a real browser (Debian's chromium over WebDriver),
//! one test program: the pages and their screenshots
//! (`dashboard_browser`), and attacks from other origins
//! (`dashboard_attacks`). Kept apart from `tests/cli/` because these need
//! chromium and chromedriver, run one browser at a time, and are the
//! slow part: `cargo test -p emq --test cli` runs everything else.

mod browser;
#[path = "../common/mod.rs"]
mod common;
mod dashboard_attacks;
mod dashboard_browser;
