//! The operating endpoints against the registry and the OpenAPI document.

use super::fields::{self, FieldKind};
use super::table::{self, Served};
use echomq::Transition;
use echomq::acl::Role;
use serde_json::json;

/// The document as the router registers it.
fn document() -> serde_json::Value {
    let (_, document) = crate::api::endpoints().split_for_parts();
    serde_json::to_value(document).unwrap()
}

#[test]
fn every_control_an_operator_or_producer_sends_has_an_endpoint() {
    let document = document();
    let paths = document["paths"].as_object().unwrap();
    let sent = Transition::ALL
        .iter()
        .filter(|t| Role::Operator.sends(**t) || Role::Producer.sends(**t));
    for t in sent {
        let path = match table::served(*t) {
            Served::Queue | Served::Job => super::path(*t).unwrap(),
            Served::Worker(path)
            | Served::Read(path)
            | Served::Produce(path)
            | Served::Operate(path) => path.to_string(),
            Served::Inside(why) => {
                assert!(!why.is_empty(), "{t:?}: say which call sends it");
                continue;
            }
        };
        assert!(
            paths.contains_key(&path),
            "{t:?} is served at {path}, which the document lacks"
        );
    }
}

#[test]
fn every_control_endpoint_is_a_row_and_documents_the_rows_fields() {
    let document = document();
    let paths = document["paths"].as_object().unwrap();
    let controls: Vec<&String> = paths.keys().filter(|p| p.contains("/controls/")).collect();
    for path in &controls {
        let t = Transition::ALL
            .iter()
            .find(|t| super::path(**t).as_deref() == Some(path.as_str()))
            .unwrap_or_else(|| panic!("{path} is no control's endpoint"));
        let schema =
            &paths[path.as_str()]["post"]["requestBody"]["content"]["application/json"]["schema"];
        assert_eq!(schema["additionalProperties"], json!(false), "{path}");
        let documented: Vec<&str> = schema["properties"]
            .as_object()
            .map(|p| p.keys().map(String::as_str).collect())
            .unwrap_or_default();
        let mut expected: Vec<String> = fields::fields(*t).into_iter().map(|f| f.name).collect();
        expected.sort();
        let mut documented: Vec<String> = documented.into_iter().map(str::to_string).collect();
        documented.sort();
        assert_eq!(documented, expected, "{path}");
    }
    let served = Transition::ALL
        .iter()
        .filter_map(|t| super::path(*t))
        .count();
    assert_eq!(controls.len(), served);
}

#[test]
fn verbs_are_lower_case_with_dashes() {
    assert_eq!(table::verb(Transition::GroupPause), "group-pause");
    assert_eq!(table::verb(Transition::StalledCheck), "stalled-check");
    assert_eq!(
        super::path(Transition::Drain).as_deref(),
        Some("/queues/{q}/controls/drain")
    );
    assert_eq!(
        super::path(Transition::Cancel).as_deref(),
        Some("/queues/{q}/jobs/{id}/controls/cancel")
    );
}

#[test]
fn a_body_is_checked_against_its_row() {
    let field = |t, body| fields::parse(t, body).unwrap_err().field;
    assert_eq!(
        field(Transition::Drain, json!({"sheduled": true})),
        "sheduled"
    );
    assert_eq!(field(Transition::GroupPause, json!({})), "group");
    assert_eq!(field(Transition::Concurrency, json!({"max": 0})), "max");
    assert_eq!(
        field(Transition::Concurrency, json!({"max": 2, "off": true})),
        "off"
    );
    assert_eq!(field(Transition::Limit, json!({"max": 2})), "per");
    assert_eq!(
        field(Transition::Drain, json!({"scheduled": 1})),
        "scheduled"
    );
    assert_eq!(
        field(
            Transition::StalledCheck,
            json!({"max_stalls": 1, "retry_in": []})
        ),
        "retry_in"
    );
    let body = fields::parse(Transition::Limit, json!({"max": 2, "per": 1000})).unwrap();
    assert_eq!((body.int("max"), body.int("per")), (Some(2), Some(1000)));
    // A job's control takes its id from the path, not the body.
    assert!(fields::fields(Transition::Cancel).is_empty());
    let update = fields::fields(Transition::Update);
    assert_eq!(update[0].kind, FieldKind::Json);
    // The library's own options are no fields.
    assert_eq!(field(Transition::Drain, json!({"count": 5})), "count");
}

#[test]
fn docs_http_md_has_a_curl_line_for_every_worker_and_control_endpoint() {
    let guide = include_str!("../../../../../docs/http.md");
    let curls: Vec<&str> = guide.lines().filter(|l| l.starts_with("curl ")).collect();
    for t in Transition::ALL {
        let path = match (table::served(*t), super::path(*t)) {
            (_, Some(path)) => path,
            (Served::Worker(path) | Served::Produce(path) | Served::Operate(path), None) => {
                path.to_string()
            }
            _ => continue,
        };
        let tail = path
            .rsplit_once("}/")
            .map_or(path.trim_start_matches('/'), |(_, tail)| tail);
        assert!(
            curls
                .iter()
                .any(|l| l.contains(&format!("/{tail} ")) || l.ends_with(&format!("/{tail}"))),
            "docs/http.md has no curl line for {path}"
        );
    }
}
