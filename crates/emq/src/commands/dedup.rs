//! `emq dedup <queue> <KEY> [--release]`: which job holds a deduplication
//! key and until when, or (`--release`) free it.

use super::{open, out, out_json};
use crate::cli::{DedupArgs, Global};
use crate::error::CliError;
use crate::time::rfc3339;
use serde_json::json;

pub(crate) async fn run(args: &DedupArgs, global: &Global) -> Result<(), CliError> {
    echomq::protocol::dedup::check_key(&args.key)
        .map_err(|reason| CliError::usage(format!("KEY {:?}: {reason}", args.key)))?;
    let queue = open(&args.queue, global).await?;
    let jobs = queue.jobs();
    let key = &args.key;
    if args.release {
        let released = jobs.release_dedup(key).await?;
        if global.json {
            return out_json(&json!({ "key": key, "released": released }));
        }
        return out(&if released {
            format!("released {key}\n")
        } else {
            format!("{key} was not held\n")
        });
    }
    let hold = jobs.dedup_hold(key).await?;
    if global.json {
        return out_json(&json!({
            "key": key,
            "held": hold.is_some(),
            "owner": hold.as_ref().map(|hold| hold.owner.as_str()),
            "until": hold.as_ref().and_then(|hold| hold.until),
            "until_utc": hold.as_ref().and_then(|hold| hold.until).map(rfc3339),
        }));
    }
    out(&match hold {
        None => format!("{key} is not held\n"),
        Some(hold) => match hold.until {
            Some(until) => format!(
                "{key} is held by job {} until {}\n",
                hold.owner,
                rfc3339(until)
            ),
            None => format!("{key} is held by job {} until it is released\n", hold.owner),
        },
    })
}
