//! Retention over a whole queue: how many finished jobs each finished set
//! keeps and for how long (docs/protocol.md, "Retention by age"), read and
//! written by `RETENTION`. The trims that apply the rules run inside the
//! transitions that finish jobs and inside the stalled sweep, on the
//! server clock.

use crate::admin::Admin;
use crate::error::{Error, Result};
use crate::flow::{field, numbers};
use crate::transport::dispatch::Call;
use echomq_protocol::Transition;
use echomq_protocol::arg::MAX_INT;
use std::time::Duration;

/// A queue's retention as `RETENTION` reads it: for each finished set, how
/// many jobs it keeps (the newest; 0 keeps none) and, when it has an age
/// rule, how long a job stays after it finished (server clock). As JSON,
/// ages are whole ms (`completed_for_ms`, …), `null` without an age rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Retention {
    /// Completed jobs kept.
    pub completed: u64,
    /// How long a completed job is kept; `None` for no age rule.
    #[serde(rename = "completed_for_ms", serialize_with = "as_optional_ms")]
    pub completed_for: Option<Duration>,
    /// Dead jobs kept.
    pub dead: u64,
    /// How long a dead job is kept; `None` for no age rule.
    #[serde(rename = "dead_for_ms", serialize_with = "as_optional_ms")]
    pub dead_for: Option<Duration>,
    /// Cancelled jobs kept.
    pub cancelled: u64,
    /// How long a cancelled job is kept; `None` for no age rule.
    #[serde(rename = "cancelled_for_ms", serialize_with = "as_optional_ms")]
    pub cancelled_for: Option<Duration>,
}

fn as_optional_ms<S: serde::Serializer>(
    age: &Option<Duration>,
    serializer: S,
) -> std::result::Result<S::Ok, S::Error> {
    match age {
        Some(age) => serializer.serialize_some(&(age.as_millis() as u64)),
        None => serializer.serialize_none(),
    }
}

/// What a change does to one set's age rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AgeChange {
    /// Keep a job this long after it finished.
    Keep(Duration),
    /// Remove the age rule.
    Off,
}

/// A change of a queue's retention for [`Admin::set_retention`]: each
/// setting given is written, every other one stays as it is.
///
/// ```
/// # use echomq::RetentionChange;
/// # use std::time::Duration;
/// let change = RetentionChange::new()
///     .completed(500)
///     .completed_for(Duration::from_secs(24 * 3600))
///     .dead_for_off();
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RetentionChange {
    completed: Option<u64>,
    completed_for: Option<AgeChange>,
    dead: Option<u64>,
    dead_for: Option<AgeChange>,
    cancelled: Option<u64>,
    cancelled_for: Option<AgeChange>,
}

impl RetentionChange {
    /// A change of nothing: sent as it is, it only reads.
    pub fn new() -> Self {
        Self::default()
    }

    /// Keeps the newest `n` completed jobs (0 keeps none).
    pub fn completed(mut self, n: u64) -> Self {
        self.completed = Some(n);
        self
    }

    /// Deletes a completed job once it finished more than `age` ago (whole
    /// ms, at least 1: a shorter age is refused by
    /// [`Admin::set_retention`]; [`RetentionChange::completed_for_off`]
    /// removes the rule).
    pub fn completed_for(mut self, age: Duration) -> Self {
        self.completed_for = Some(AgeChange::Keep(age));
        self
    }

    /// Removes the age rule of completed jobs: only the count applies.
    pub fn completed_for_off(mut self) -> Self {
        self.completed_for = Some(AgeChange::Off);
        self
    }

    /// Keeps the newest `n` dead jobs (0 keeps none).
    pub fn dead(mut self, n: u64) -> Self {
        self.dead = Some(n);
        self
    }

    /// Deletes a dead job once it finished more than `age` ago (as
    /// [`RetentionChange::completed_for`]).
    pub fn dead_for(mut self, age: Duration) -> Self {
        self.dead_for = Some(AgeChange::Keep(age));
        self
    }

    /// Removes the age rule of dead jobs.
    pub fn dead_for_off(mut self) -> Self {
        self.dead_for = Some(AgeChange::Off);
        self
    }

    /// Keeps the newest `n` cancelled jobs (0 keeps none).
    pub fn cancelled(mut self, n: u64) -> Self {
        self.cancelled = Some(n);
        self
    }

    /// Deletes a cancelled job once it finished more than `age` ago (as
    /// [`RetentionChange::completed_for`]).
    pub fn cancelled_for(mut self, age: Duration) -> Self {
        self.cancelled_for = Some(AgeChange::Keep(age));
        self
    }

    /// Removes the age rule of cancelled jobs.
    pub fn cancelled_for_off(mut self) -> Self {
        self.cancelled_for = Some(AgeChange::Off);
        self
    }

    /// Whether the change writes nothing.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// RETENTION's options for this change, checked: an age is whole ms in
    /// [1, 2^53 − 1], a count at most 2^53 − 1.
    fn options(&self) -> Result<Vec<(&'static str, u64)>> {
        let counts = [
            ("COMPLETED", "completed", self.completed),
            ("DEAD", "dead", self.dead),
            ("CANCELLED", "cancelled", self.cancelled),
        ];
        let ages = [
            ("COMPLETED_FOR", "completed_for", self.completed_for),
            ("DEAD_FOR", "dead_for", self.dead_for),
            ("CANCELLED_FOR", "cancelled_for", self.cancelled_for),
        ];
        let mut options = Vec::new();
        for (word, name, count) in counts {
            if let Some(n) = count {
                if n > MAX_INT {
                    return Err(Error::BadArgument {
                        name,
                        reason: format!("{n} is above 2^53 - 1"),
                    });
                }
                options.push((word, n));
            }
        }
        for (word, name, age) in ages {
            match age {
                None => {}
                Some(AgeChange::Off) => options.push((word, 0)),
                Some(AgeChange::Keep(age)) => {
                    let ms = age.as_millis();
                    if ms == 0 {
                        return Err(Error::BadArgument {
                            name,
                            reason: format!(
                                "an age under 1 ms ({age:?}); {name}_off() removes the age rule"
                            ),
                        });
                    }
                    if ms > u128::from(MAX_INT) {
                        return Err(Error::BadArgument {
                            name,
                            reason: format!("{ms} ms is above 2^53 - 1"),
                        });
                    }
                    options.push((word, ms as u64));
                }
            }
        }
        Ok(options)
    }
}

impl<T> Admin<T> {
    /// Changes the queue's retention: writes the settings `change` gives
    /// (each set's count and age rule), keeps the others, and answers the
    /// retention as it is after. Trims nothing itself: each set's next trim
    /// (a job finishing into it, or the stalled sweep) applies the rules, at
    /// most 100 jobs a call. A change refused on the client (an age under
    /// 1 ms) sends nothing.
    pub async fn set_retention(&self, change: RetentionChange) -> Result<Retention> {
        let mut call = Call::new(Transition::Retention, None);
        for (word, n) in change.options()? {
            call = call.arg(word).int(n);
        }
        decode_retention(self.queue.call(call).await?)
    }

    /// The queue's retention: each finished set's count and age rule.
    pub async fn retention(&self) -> Result<Retention> {
        decode_retention(
            self.queue
                .call(Call::new(Transition::Retention, None))
                .await?,
        )
    }
}

/// RETENTION's reply: `[completed n completed_for ms dead n dead_for ms
/// cancelled n cancelled_for ms]`, an age 0 for none.
fn decode_retention(reply: redis::Value) -> Result<Retention> {
    let t = Transition::Retention;
    let map = numbers(t, reply)?;
    let get = |name: &str| field(t, &map, name);
    let age = |name: &str| -> Result<Option<Duration>> {
        let ms = get(name)?;
        Ok((ms > 0).then(|| Duration::from_millis(ms)))
    };
    Ok(Retention {
        completed: get("completed")?,
        completed_for: age("completed_for")?,
        dead: get("dead")?,
        dead_for: age("dead_for")?,
        cancelled: get("cancelled")?,
        cancelled_for: age("cancelled_for")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_change_sends_no_option() {
        assert!(RetentionChange::new().is_empty());
        assert!(RetentionChange::new().options().unwrap().is_empty());
    }

    #[test]
    fn off_sends_an_age_of_0_and_an_age_sends_its_whole_ms() {
        let change = RetentionChange::new()
            .completed(5)
            .completed_for(Duration::from_millis(1500))
            .dead_for_off();
        assert_eq!(
            change.options().unwrap(),
            [("COMPLETED", 5), ("COMPLETED_FOR", 1500), ("DEAD_FOR", 0)]
        );
    }

    #[test]
    fn an_age_under_1_ms_is_refused_naming_its_setting() {
        let change = RetentionChange::new().cancelled_for(Duration::from_micros(999));
        let err = change.options().unwrap_err();
        assert!(
            matches!(
                err,
                Error::BadArgument {
                    name: "cancelled_for",
                    ..
                }
            ),
            "{err}"
        );
        assert!(err.to_string().contains("cancelled_for_off()"), "{err}");
    }

    #[test]
    fn a_count_above_2_pow_53_is_refused_naming_its_setting() {
        let err = RetentionChange::new()
            .dead(MAX_INT + 1)
            .options()
            .unwrap_err();
        assert!(
            matches!(err, Error::BadArgument { name: "dead", .. }),
            "{err}"
        );
    }

    #[test]
    fn an_age_of_none_is_null_in_json_and_an_age_is_whole_ms() {
        let retention = Retention {
            completed: 1000,
            completed_for: Some(Duration::from_secs(2)),
            dead: 10,
            dead_for: None,
            cancelled: 0,
            cancelled_for: None,
        };
        let json = serde_json::to_value(retention).unwrap();
        assert_eq!(json["completed_for_ms"], 2000);
        assert!(json["dead_for_ms"].is_null());
    }
}
