//! `cargo bench -p emq`: the measurements of `emq bench` on an embedded
//! server (jobs from `EMQ_BENCH_JOBS`, default 100000).

use emq::bench::{BenchConfig, render, run};
use emq::cli::RuntimeArg;

fn main() {
    let jobs = std::env::var("EMQ_BENCH_JOBS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let flavor = RuntimeArg::CurrentThread;
    let runtime = flavor.build().expect("tokio runtime");
    match runtime.block_on(run(&BenchConfig::new(jobs))) {
        Ok(mut report) => {
            report.setup.runtime = flavor.as_str().to_string();
            print!("{}", render(&report));
        }
        Err(err) => {
            eprintln!("lifecycle bench: {err}");
            std::process::exit(i32::from(err.code));
        }
    }
}
