//! Query strings, strictly: [`Query`] refuses an unknown parameter (400
//! naming it), and the values are read by [`duration`] and [`whole`],
//! which name the parameter they refuse.

use super::error::ApiError;
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use serde::de::DeserializeOwned;
use std::time::Duration;

/// The longest wait a query may ask for (`?wait=`, `?timeout=`).
pub(crate) const LONGEST_WAIT: Duration = Duration::from_secs(300);

/// A query string read as `T` (strings only, `deny_unknown_fields`).
#[derive(Debug)]
pub(crate) struct Query<T>(pub(crate) T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for Query<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, ApiError> {
        match axum::extract::Query::<T>::try_from_uri(&parts.uri) {
            Ok(axum::extract::Query(value)) => Ok(Query(value)),
            Err(rejection) => {
                let text = rejection.body_text();
                let named = text
                    .split_once("field `")
                    .and_then(|(_, rest)| rest.split_once('`'))
                    .map(|(name, _)| name.to_string());
                let error = ApiError::bad_request(format!("the query: {text}"));
                Err(match named {
                    Some(name) => error.with_field(name),
                    None => error,
                })
            }
        }
    }
}

/// `text`, a whole number and a unit (`250ms`, `30s`, `5m`), as a
/// duration of at most `most`; 400 naming `param` otherwise.
pub(crate) fn duration(param: &str, text: &str, most: Duration) -> Result<Duration, ApiError> {
    let wrong = |why: &str| {
        ApiError::bad_request(format!("query parameter {param}={text:?}: {why}")).with_field(param)
    };
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .ok_or_else(|| wrong("expected a whole number and a unit: 250ms, 30s, 5m"))?;
    let (number, unit) = text.split_at(split);
    let number: u64 = number
        .parse()
        .map_err(|_| wrong("expected a whole number and a unit: 250ms, 30s, 5m"))?;
    let duration = match unit {
        "ms" => Duration::from_millis(number),
        "s" => Duration::from_secs(number),
        "m" => Duration::from_secs(number.saturating_mul(60)),
        _ => return Err(wrong("the unit is ms, s or m")),
    };
    if duration > most {
        return Err(wrong(&format!("at most {} s", most.as_secs())));
    }
    Ok(duration)
}

/// `text` as a whole number from `least` to `most`; 400 naming `param`
/// otherwise.
pub(crate) fn whole(param: &str, text: &str, least: u64, most: u64) -> Result<u64, ApiError> {
    text.parse::<u64>()
        .ok()
        .filter(|n| (least..=most).contains(n))
        .ok_or_else(|| {
            ApiError::bad_request(format!(
                "query parameter {param}={text:?}: expected a whole number from {least} to {most}"
            ))
            .with_field(param)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_are_a_whole_number_and_a_unit() {
        let most = LONGEST_WAIT;
        assert_eq!(
            duration("wait", "250ms", most),
            Ok(Duration::from_millis(250))
        );
        assert_eq!(duration("wait", "30s", most), Ok(Duration::from_secs(30)));
        assert_eq!(duration("wait", "5m", most), Ok(Duration::from_secs(300)));
        for bad in ["", "30", "s", "1.5s", "6m", "30 s", "30h", "-1s"] {
            let refused = duration("wait", bad, most).unwrap_err();
            assert_eq!(refused.detail.field.as_deref(), Some("wait"), "{bad}");
        }
    }
}
