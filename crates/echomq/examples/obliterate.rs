//! How long the longest single server command runs while a queue of
//! 1,000,000 jobs is obliterated (target: at most 10 ms). Obliterate works
//! in chunks of 1000 jobs per script run; this measures every command the
//! server ran during it (SLOWLOG with a 0 µs threshold) and a second
//! client's worst PING round trip.
//!
//! ```sh
//! cargo build --release -p echomq --example obliterate
//! EMQ_VALKEY_SERVER=$(scripts/valkey) target/release/examples/obliterate
//! ```
//!
//! Environment: `EMQ_URL` (default: an embedded server), `JOBS` (1000000).

use echomq::{Connector, NewJob};
use echomq_server::{ServerBinary, ServerConfig, ServerProcess};
use std::time::{Duration, Instant};

/// A SLOWLOG entry: id, unix time, duration in µs, the command's words.
type SlowlogEntry = (u64, u64, u64, Vec<String>);

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let jobs: u64 = std::env::var("JOBS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let dir = std::env::temp_dir().join(format!("emq-obliterate-{}", std::process::id()));
    let mut _server = None;
    let url = match std::env::var("EMQ_URL") {
        Ok(url) => url,
        Err(_) => {
            let server = ServerProcess::spawn(&ServerBinary::locate()?, &ServerConfig::new(&dir))?;
            let url = server.url();
            _server = Some(server);
            url
        }
    };
    let emq = Connector::connect(url.clone()).await?;
    let queue = emq.queue::<u64>(&format!("obliterate-{}", std::process::id()))?;
    let filled = Instant::now();
    for start in (0..jobs).step_by(100_000) {
        queue
            .enqueue_bulk((start..(start + 100_000).min(jobs)).map(NewJob::new))
            .await?;
    }
    println!(
        "enqueued {jobs} jobs in {:.1} s",
        filled.elapsed().as_secs_f64()
    );
    queue.admin().pause().await?;

    let client = redis::Client::open(url.as_str())?;
    let patient = redis::AsyncConnectionConfig::new().set_response_timeout(None);
    let mut admin = client
        .get_multiplexed_async_connection_with_config(&patient)
        .await?;
    redis::cmd("CONFIG")
        .arg("SET")
        .arg("slowlog-log-slower-than")
        .arg(0)
        .query_async::<()>(&mut admin)
        .await?;
    redis::cmd("CONFIG")
        .arg("SET")
        .arg("slowlog-max-len")
        .arg(100_000)
        .query_async::<()>(&mut admin)
        .await?;
    redis::cmd("SLOWLOG")
        .arg("RESET")
        .query_async::<()>(&mut admin)
        .await?;

    let pinger = {
        let client = client.clone();
        let pending = queue.keys().pending();
        tokio::spawn(async move {
            let patient = redis::AsyncConnectionConfig::new().set_response_timeout(None);
            let mut conn = client
                .get_multiplexed_async_connection_with_config(&patient)
                .await
                .unwrap();
            let (mut pings, mut worst) = (0u64, Duration::ZERO);
            loop {
                let sent = Instant::now();
                let _: String = redis::cmd("PING").query_async(&mut conn).await.unwrap();
                worst = worst.max(sent.elapsed());
                pings += 1;
                let left: u64 = redis::cmd("EXISTS")
                    .arg(&pending)
                    .query_async(&mut conn)
                    .await
                    .unwrap();
                if left == 0 {
                    return (pings, worst);
                }
            }
        })
    };
    let started = Instant::now();
    let mut chunks = 0u64;
    queue
        .admin()
        .obliterate_with(echomq::IfActive::Refuse, |_| chunks += 1)
        .await?;
    let took = started.elapsed();
    let (pings, worst_ping) = pinger.await?;

    let entries: Vec<SlowlogEntry> = redis::cmd("SLOWLOG")
        .arg("GET")
        .arg(-1)
        .query_async::<Vec<redis::Value>>(&mut admin)
        .await?
        .into_iter()
        .filter_map(|entry| {
            let redis::Value::Array(parts) = entry else {
                return None;
            };
            let id = redis::from_redis_value(parts.first()?.clone()).ok()?;
            let at = redis::from_redis_value(parts.get(1)?.clone()).ok()?;
            let micros = redis::from_redis_value(parts.get(2)?.clone()).ok()?;
            let args: Vec<String> =
                redis::from_redis_value(parts.get(3)?.clone()).unwrap_or_default();
            Some((id, at, micros, args))
        })
        // The measurement's own SLOWLOG RESET is not part of the obliterate.
        .filter(|(_, _, _, args)| {
            !args
                .first()
                .is_some_and(|a| a.eq_ignore_ascii_case("SLOWLOG"))
        })
        .collect();
    redis::cmd("CONFIG")
        .arg("SET")
        .arg("slowlog-log-slower-than")
        .arg(10_000)
        .query_async::<()>(&mut admin)
        .await?;
    let scripts: Vec<&SlowlogEntry> = entries
        .iter()
        .filter(|(_, _, _, args)| {
            args.first().is_some_and(|a| {
                a.eq_ignore_ascii_case("EVALSHA") || a.eq_ignore_ascii_case("EVAL")
            })
        })
        .collect();
    let longest = entries.iter().map(|e| e.2).max().unwrap_or(0);
    let mut script_times: Vec<u64> = scripts.iter().map(|e| e.2).collect();
    script_times.sort_unstable();
    let p99 = script_times
        .get(script_times.len().saturating_sub(1) * 99 / 100)
        .copied()
        .unwrap_or(0);
    let mut in_order: Vec<&SlowlogEntry> = scripts.clone();
    in_order.sort_by_key(|e| e.0);
    let mut slowest: Vec<(usize, &&SlowlogEntry)> = in_order.iter().enumerate().collect();
    slowest.sort_by_key(|(_, e)| std::cmp::Reverse(e.2));
    for (position, (_, _, micros, _)) in slowest.iter().take(3) {
        println!(
            "slow: {micros} µs, obliterate call {} of {}",
            position + 1,
            in_order.len()
        );
    }
    println!(
        "obliterate of {jobs} jobs: {chunks} calls in {:.2} s",
        took.as_secs_f64()
    );
    println!("{:<40}{:>10}", "longest server command (µs)", longest);
    println!("{:<40}{:>10}", "p99 obliterate chunk (µs)", p99);
    println!(
        "{:<40}{:>10.2}",
        "worst concurrent PING round trip (ms)",
        worst_ping.as_secs_f64() * 1000.0
    );
    println!("{:<40}{:>10}", "PINGs answered during it", pings);
    Ok(())
}
