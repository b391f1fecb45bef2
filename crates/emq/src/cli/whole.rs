//! Whole-number options (`--page`, `--attempts`, `--concurrency`…) whose
//! refusal says what is allowed: "at least 1", "from 1 to 1000".

/// A parser of a whole number `min` or more.
pub(super) fn at_least(
    min: u64,
) -> impl Fn(&str) -> Result<u64, String> + Clone + Send + Sync + 'static {
    move |text| parse(text, min, u64::MAX, format!("at least {min}"))
}

/// A parser of a whole number from `min` to `max`, both included.
pub(super) fn between(
    min: u64,
    max: u64,
) -> impl Fn(&str) -> Result<u64, String> + Clone + Send + Sync + 'static {
    move |text| parse(text, min, max, format!("from {min} to {max}"))
}

/// `text` as a whole number in `min..=max`, or why not (`allowed` says
/// which numbers are).
fn parse(text: &str, min: u64, max: u64, allowed: String) -> Result<u64, String> {
    match text.parse::<u64>() {
        Ok(n) if (min..=max).contains(&n) => Ok(n),
        _ => Err(format!("expected a whole number {allowed}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn says_what_is_allowed() {
        assert_eq!(
            at_least(1)("0"),
            Err("expected a whole number at least 1".into())
        );
        assert_eq!(
            at_least(1)("-1"),
            Err("expected a whole number at least 1".into())
        );
        assert_eq!(
            at_least(1)("1.5"),
            Err("expected a whole number at least 1".into())
        );
        assert_eq!(at_least(1)("7"), Ok(7));
        assert_eq!(
            between(1, 1000)("1001"),
            Err("expected a whole number from 1 to 1000".into())
        );
        assert_eq!(between(0, 10)("0"), Ok(0));
    }
}
