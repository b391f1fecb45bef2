//! A flow: fetch an image, resize it to two sizes at once, then mail the
//! links, across two queues — the mail job runs only after both resizes
//! ended and reads their results (docs/flows.md).
//!
//! `EMQ_URL=redis://127.0.0.1:6379 cargo run -p echomq --example flows`
//! (start a server with `emq server`). The test `tests/suite/flows_example.rs`
//! runs `run` against a real server, twice.

use echomq::{Connector, Flow, JobContext, JobError, NewJob, Outcome, Policy, Worker};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// A job of the images queue.
#[derive(Serialize, Deserialize)]
enum Image {
    Fetch { url: String },
    Resize { px: u32 },
}

/// The mail job: who gets the links.
#[derive(Serialize, Deserialize)]
struct Mail {
    to: String,
}

/// Submits the flow `order` and runs workers on both queues until its
/// mail job is decided; answers the mail job's result (the links it
/// sent, in order of size).
pub(crate) async fn run(url: &str, order: &str) -> echomq::Result<Vec<String>> {
    let emq = Connector::connect(url).await?;
    let images = emq.queue::<Image>("images")?;
    let mailer = emq.queue::<Mail>("mailer")?;

    let mut flow = Flow::new(order);
    let fetch = flow.add_as(
        "fetch",
        &images,
        NewJob::new(Image::Fetch {
            url: "https://example.com/cat.png".into(),
        }),
    );
    let small = flow.add_as(
        "small",
        &images,
        NewJob::new(Image::Resize { px: 64 }).depends_on([&fetch]),
    );
    let large = flow.add_as(
        "large",
        &images,
        NewJob::new(Image::Resize { px: 1024 }).depends_on([&fetch]),
    );
    // One size failing still mails the other.
    let mail = flow.add_as(
        "mail",
        &mailer,
        NewJob::new(Mail {
            to: "ada@example.com".into(),
        })
        .depends_on([&small, &large])
        .on_dependency_failure(Policy::Ignore),
    );
    let submitted = emq.submit(&flow).await?;

    let resizer = Worker::new(images.clone(), |job: JobContext<Image>| async move {
        match job.payload {
            Image::Fetch { url } => Ok(format!("fetched {url}")),
            Image::Resize { px } => Ok(format!("https://cdn.example.com/{px}.png")),
        }
    })
    .start();
    let sender = Worker::new(mailer.clone(), |job: JobContext<Mail>| async move {
        let mut links: Vec<(u32, String)> = Vec::new();
        for dependency in job.dependencies().await.map_err(JobError::retry)? {
            if let Some(Ok(link)) = dependency.result::<String>() {
                let px = link.trim_end_matches(".png").rsplit('/').next();
                links.push((px.and_then(|px| px.parse().ok()).unwrap_or(0), link));
            }
        }
        links.sort();
        println!("mailing {} links to {}", links.len(), job.payload.to);
        Ok(links.into_iter().map(|(_, link)| link).collect::<Vec<_>>())
    })
    .start();

    let outcome = submitted[&mail]
        .outcome::<Vec<String>>(Duration::from_secs(30))
        .await;
    resizer.shutdown(Duration::from_secs(10)).await;
    sender.shutdown(Duration::from_secs(10)).await;
    match outcome? {
        Outcome::Completed { result } => Ok(result.unwrap_or_default()),
        other => Err(echomq::Error::BadArgument {
            name: "flow",
            reason: format!("the mail job ended {other:?}"),
        }),
    }
}

#[tokio::main]
#[allow(dead_code)]
async fn main() -> echomq::Result<()> {
    let url = std::env::var("EMQ_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    let order = format!("order-{}", std::process::id());
    for link in run(&url, &order).await? {
        println!("sent {link}");
    }
    Ok(())
}
