use echomq::{Connector, JobContext, JobError, Worker};
use std::time::{Duration, Instant};

async fn cpu(url: &str) -> f64 {
    let client = redis::Client::open(url).unwrap();
    let mut c = client.get_multiplexed_async_connection().await.unwrap();
    let info: String = redis::cmd("INFO")
        .arg("cpu")
        .query_async(&mut c)
        .await
        .unwrap();
    let get = |k: &str| {
        info.lines()
            .find_map(|l| l.strip_prefix(k))
            .unwrap()
            .trim()
            .parse::<f64>()
            .unwrap()
    };
    get("used_cpu_sys:") + get("used_cpu_user:")
}

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let url = std::env::var("EMQ_URL").unwrap();
        let n: u64 = std::env::var("N")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(100_000);
        let emq = Connector::connect(&url).await.unwrap();
        let q = emq
            .queue::<u64>(&format!("probe{}", std::process::id()))
            .unwrap();
        let c0 = cpu(&url).await;
        let t = Instant::now();
        q.enqueue_bulk(0..n).await.unwrap();
        let e = t.elapsed();
        let c1 = cpu(&url).await;
        println!(
            "enqueue: {:.0} jobs/s, {:.2} us/job",
            n as f64 / e.as_secs_f64(),
            (c1 - c0) * 1e6 / n as f64
        );
        let t = Instant::now();
        let w = Worker::new(q.clone(), |_j: JobContext<u64>| async move {
            Ok::<_, JobError>(())
        })
        .concurrency(50)
        .start();
        while q.counts().await.unwrap().completed + 0 < n.min(1000)
            || q.counts().await.unwrap().pending > 0
            || q.counts().await.unwrap().active > 0
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let e = t.elapsed();
        let s = w.shutdown(Duration::from_secs(5)).await;
        let c2 = cpu(&url).await;
        println!(
            "process c50: {:.0} jobs/s, {:.2} us/job, completed {}",
            n as f64 / e.as_secs_f64(),
            (c2 - c1) * 1e6 / n as f64,
            s.completed
        );
        println!("lifecycle: {:.2} us/job", (c2 - c0) * 1e6 / n as f64);
    });
}
