//! JSON in, strictly: [`Json`] reads a body into a type that denies
//! unknown fields (`#[serde(deny_unknown_fields)]`), and every way the
//! body can be wrong answers 400 `BADREQUEST` naming what was wrong:
//! malformed JSON, an unknown field, a missing one, a mistyped one
//! (`field` names it, `[2].priority` inside an array). The body's size
//! and type were checked before the handler (`access.rs`).

use super::error::ApiError;
use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use serde::de::DeserializeOwned;
use serde_json::Value;

/// A request body of JSON, read as `T` (answers are `axum::Json`).
#[derive(Debug)]
pub(crate) struct Json<T>(pub(crate) T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for Json<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, ApiError> {
        let bytes = Bytes::from_request(request, state)
            .await
            .map_err(|err| ApiError::bad_request(format!("the body could not be read: {err}")))?;
        parse(&bytes).map(Json)
    }
}

/// `bytes` as `T`, or the 400 that names what was wrong.
pub(crate) fn parse<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let mut reader = serde_json::Deserializer::from_slice(bytes);
    let value = serde_path_to_error::deserialize(&mut reader).map_err(refusal)?;
    reader.end().map_err(|err| malformed(&err))?;
    Ok(value)
}

/// `value` (already JSON) as `T`, or the 400 that names what was wrong.
pub(crate) fn from_value<T: DeserializeOwned>(value: Value) -> Result<T, ApiError> {
    serde_path_to_error::deserialize(value).map_err(refusal)
}

fn malformed(err: &serde_json::Error) -> ApiError {
    ApiError::bad_request(format!("the body is not JSON: {err}"))
}

/// The 400 for a body that failed at `err.path()`.
fn refusal(err: serde_path_to_error::Error<serde_json::Error>) -> ApiError {
    let path = err.path().to_string();
    let inner = err.into_inner();
    if !inner.is_data() {
        return malformed(&inner);
    }
    let message = inner.to_string();
    // serde names an unknown or missing field in its message, at the path
    // of the object that lacks or holds it.
    let named = ["unknown field `", "missing field `"]
        .iter()
        .find_map(|start| message.strip_prefix(start))
        .and_then(|rest| rest.split_once('`'))
        .map(|(name, _)| name);
    // An unknown field's path ends at it; a missing one's at its object.
    let field = match (named, path.as_str()) {
        (Some(name), ".") => name.to_string(),
        (Some(name), at) if at == name || at.ends_with(&format!(".{name}")) => at.to_string(),
        (Some(name), object) => format!("{object}.{name}"),
        (None, ".") => String::new(),
        (None, path) => path.to_string(),
    };
    let message = match field.is_empty() {
        true => format!("the body: {message}"),
        false => format!("field {field}: {message}"),
    };
    let error = ApiError::bad_request(message);
    match field.is_empty() {
        true => error,
        false => error.with_field(field),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Body {
        count: u8,
        name: Option<String>,
    }

    fn field(text: &str) -> Option<String> {
        parse::<Body>(text.as_bytes()).unwrap_err().detail.field
    }

    #[test]
    fn every_wrong_body_names_its_field() {
        assert_eq!(
            field(r#"{"count": 1, "nmae": "x"}"#).as_deref(),
            Some("nmae")
        );
        assert_eq!(field(r#"{"name": "x"}"#).as_deref(), Some("count"));
        assert_eq!(field(r#"{"count": "1"}"#).as_deref(), Some("count"));
        assert_eq!(field(r#"{"count": 300}"#).as_deref(), Some("count"));
        assert_eq!(field(r#"{"count": 1"#), None);
        assert_eq!(field(r#"{"count": 1} trailing"#), None);
        let many: Result<Vec<Body>, _> =
            from_value(serde_json::json!([{"count": 1}, {"count": 2, "x": 1}]));
        assert_eq!(many.unwrap_err().detail.field.as_deref(), Some("[1].x"));
    }
}
