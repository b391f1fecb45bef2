//! Who may call the API: the Host, the Origin, the token, the OpenAPI
//! document against the routes.

use super::client;
use crate::common::on_both_wires;
use axum::http::StatusCode;
use echomq::NewJob;
use http_body_util::BodyExt;
use serde_json::{Value, json};

#[tokio::test]
async fn api_routes_and_the_openapi_document_list_the_same_endpoints() {
    let site = crate::common::Site::start(echomq::Wire::Script).await;
    let api = client(&site, |d| d);
    let doc = api
        .get("/api/v1/openapi.json")
        .await
        .expect(StatusCode::OK)
        .body;
    assert!(doc["openapi"].as_str().unwrap().starts_with("3.1"), "{doc}");
    assert_eq!(doc["servers"][0]["url"], "/api/v1");
    let paths = doc["paths"].as_object().unwrap();
    assert!(paths.contains_key("/queues/{q}/jobs/{id}"), "{doc}");
    let methods = ["get", "post", "put", "patch", "delete"];
    for (path, item) in paths {
        let concrete = path.replace("{q}", "q").replace("{id}", "a");
        for method in methods {
            let (_, headers, body) = api
                .open_with(&method.to_uppercase(), &format!("/api/v1{concrete}"))
                .await;
            // A stream (the events) is served; anything else is read whole.
            let stream = headers
                .get("content-type")
                .is_some_and(|kind| kind.as_bytes().starts_with(b"text/event-stream"));
            let body: Value = match stream {
                true => Value::Null,
                false => {
                    let bytes = body.collect().await.unwrap().to_bytes();
                    serde_json::from_slice(&bytes).unwrap_or(Value::Null)
                }
            };
            let code = body["error"]["code"].clone();
            let message = body["error"]["message"].as_str().unwrap_or("");
            let no_endpoint = code == "NOTFOUND" && message.starts_with("no such endpoint");
            match item.get(method) {
                Some(_) => assert!(
                    !no_endpoint && code != "NOTALLOWED",
                    "{method} {path} is documented but not served: {body}"
                ),
                None => assert_eq!(
                    code, "NOTALLOWED",
                    "{method} {path} is served but not documented"
                ),
            }
        }
    }
    let unknown = api.get("/api/v1/no/such/thing").await;
    assert_eq!(
        unknown.refused(StatusCode::NOT_FOUND, "NOTFOUND")["code"],
        "NOTFOUND"
    );
}

#[tokio::test]
async fn api_under_a_base_path_is_served_beneath_it() {
    let site = crate::common::Site::start(echomq::Wire::Script).await;
    let api = client(&site, |d| d.base_path("/emq").unwrap());
    let doc = api
        .get("/emq/api/v1/openapi.json")
        .await
        .expect(StatusCode::OK)
        .body;
    assert_eq!(doc["servers"][0]["url"], "/emq/api/v1");
    api.get("/api/v1/openapi.json")
        .await
        .expect(StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn api_refuses_a_foreign_origin_with_403() {
    let site = crate::common::Site::start(echomq::Wire::Script).await;
    let api = client(&site, |d| d);
    let own = api.clone().with_header("origin", "http://127.0.0.1");
    own.get("/api/v1/openapi.json").await.expect(StatusCode::OK);
    for origin in ["http://evil.example", "null", "http://127.0.0.1:9999"] {
        let error = api
            .clone()
            .with_header("origin", origin)
            .get("/api/v1/openapi.json")
            .await
            .refused(StatusCode::FORBIDDEN, "FORBIDDEN");
        assert!(
            error["message"].as_str().unwrap().contains("Origin"),
            "{error}"
        );
    }
}

#[tokio::test]
async fn api_refuses_a_host_it_does_not_serve_with_421() {
    let site = crate::common::Site::start(echomq::Wire::Script).await;
    let api = client(&site, |d| d).with_header("host", "evil.example");
    api.get("/api/v1/openapi.json")
        .await
        .refused(StatusCode::MISDIRECTED_REQUEST, "MISDIRECTED");
}

#[tokio::test]
async fn api_without_the_token_answers_401() {
    on_both_wires(|site| async move {
        site.queue("q")
            .enqueue(NewJob::new(json!(1)).id("a").unwrap())
            .await
            .unwrap();
        let api = client(&site, |d| d.token("s3cret"));
        let none = api.get("/api/v1/queues/q/jobs/a").await;
        assert!(none.headers.contains_key("www-authenticate"));
        none.refused(StatusCode::UNAUTHORIZED, "UNAUTHORIZED");
        // A signed-in session's cookie is not a token to the API.
        let cookie = api.clone().with_header("cookie", "emq_session=whatever");
        cookie
            .get("/api/v1/queues/q/jobs/a")
            .await
            .refused(StatusCode::UNAUTHORIZED, "UNAUTHORIZED");
    })
    .await;
}

#[tokio::test]
async fn api_with_a_wrong_token_answers_401() {
    let site = crate::common::Site::start(echomq::Wire::Script).await;
    let api = client(&site, |d| d.token("s3cret")).with_header("authorization", "Bearer guess");
    let error = api
        .get("/api/v1/queues/q/jobs/a")
        .await
        .refused(StatusCode::UNAUTHORIZED, "UNAUTHORIZED");
    assert_eq!(error["message"], "wrong token");
}

#[tokio::test]
async fn api_with_the_token_is_served() {
    on_both_wires(|site| async move {
        site.queue("q")
            .enqueue(NewJob::new(json!(1)).id("a").unwrap())
            .await
            .unwrap();
        let api =
            client(&site, |d| d.token("s3cret")).with_header("authorization", "Bearer s3cret");
        let job: Value = api
            .get("/api/v1/queues/q/jobs/a")
            .await
            .expect(StatusCode::OK)
            .body;
        assert_eq!(job["id"], "a");
    })
    .await;
}
