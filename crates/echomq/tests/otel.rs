//! Traces across the queue (feature `otel`): an enqueue's span and the
//! span of every attempt of its job share one trace, each attempt a child
//! of the enqueue (and linked to it), the handler's own spans children of
//! the attempt's. Against real servers, on both wires, with the SDK's
//! in-memory exporter installed as the global tracer provider.
#![cfg(feature = "otel")]

mod common;

use common::Harness;
use echomq::{JobContext, JobError, NewJob, Queue, Worker};
use echomq_testkit::wait_for;
use opentelemetry::trace::{FutureExt as _, SpanId, SpanKind, Status, TraceContextExt, Tracer};
use opentelemetry::{Context, Value, global};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

const BOUND: Duration = Duration::from_secs(20);

/// The exporter of the global provider, installed once for every test of
/// this file (they share it; each reads the spans of its own queue).
fn exporter() -> &'static InMemorySpanExporter {
    static EXPORTER: OnceLock<InMemorySpanExporter> = OnceLock::new();
    EXPORTER.get_or_init(|| {
        let exporter = InMemorySpanExporter::default();
        let provider = SdkTracerProvider::builder()
            .with_simple_exporter(exporter.clone())
            .build();
        global::set_tracer_provider(provider);
        exporter
    })
}

/// The finished spans named `name`, in the order they ended.
fn spans(name: &str) -> Vec<SpanData> {
    exporter()
        .get_finished_spans()
        .unwrap()
        .into_iter()
        .filter(|span| span.name == name)
        .collect()
}

/// Waits until `count` spans named `name` ended; returns them.
async fn ended(name: &str, count: usize) -> Vec<SpanData> {
    wait_for(&format!("{count} spans {name}"), BOUND, || async {
        spans(name).len() >= count
    })
    .await;
    spans(name)
}

fn attribute(span: &SpanData, key: &str) -> Option<Value> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| kv.value.clone())
}

/// A worker whose handler fails the first attempt and completes the
/// second, each inside a span of its own (`handler <queue>`); waits for
/// the job to complete.
async fn fail_once_then_complete(queue: &Queue<u32>) {
    let tries = std::sync::Arc::new(AtomicU32::new(0));
    let name = format!("handler {}", queue.name());
    let worker = Worker::new(queue.clone(), move |job: JobContext<u32>| {
        let (tries, name) = (tries.clone(), name.clone());
        async move {
            // A span the handler starts is a child of the attempt's.
            let span = global::tracer("handler").start(name);
            span_end(span);
            if tries.fetch_add(1, Ordering::SeqCst) == 0 {
                return Err(JobError::retry(format!("first try of {}", job.id)));
            }
            Ok(job.payload)
        }
    })
    .retry_delay(Duration::ZERO)
    .start();
    wait_for("the job to complete", BOUND, || async {
        queue.admin().counts().await.unwrap().completed == 1
    })
    .await;
    worker.shutdown(Duration::from_secs(5)).await;
}

fn span_end(mut span: impl opentelemetry::trace::Span) {
    span.end();
}

/// The enqueue's span, and the two attempts' spans in one trace under it.
async fn assert_traced_attempts(queue: &Queue<u32>, enqueue: &SpanData) {
    let q = queue.name().as_str();
    assert_eq!(enqueue.span_kind, SpanKind::Producer);
    assert_eq!(
        attribute(enqueue, "messaging.system"),
        Some("echomq".into())
    );
    assert_eq!(
        attribute(enqueue, "messaging.destination.name"),
        Some(q.to_string().into())
    );
    let process = ended(&format!("emq process {q}"), 2).await;
    assert_eq!(process.len(), 2, "one span per attempt");
    let trace_id = enqueue.span_context.trace_id();
    for (n, span) in process.iter().enumerate() {
        assert_eq!(span.span_kind, SpanKind::Consumer);
        assert_eq!(span.span_context.trace_id(), trace_id, "one trace");
        assert_eq!(span.parent_span_id, enqueue.span_context.span_id());
        assert!(span.parent_span_is_remote);
        let link = &span.links.links[0];
        assert_eq!(link.span_context.span_id(), enqueue.span_context.span_id());
        assert_eq!(link.span_context.trace_id(), trace_id);
        assert_eq!(attribute(span, "messaging.system"), Some("echomq".into()));
        assert_eq!(
            attribute(span, "messaging.destination.name"),
            Some(q.to_string().into())
        );
        assert_eq!(
            attribute(span, "messaging.echomq.attempt"),
            Some(Value::I64(n as i64 + 1))
        );
        assert_eq!(
            attribute(span, "messaging.message.id"),
            attribute(enqueue, "messaging.message.id")
        );
    }
    assert!(
        matches!(&process[0].status, Status::Error { description } if description.starts_with("first try of")),
        "the failed attempt: {:?}",
        process[0].status
    );
    assert_eq!(process[1].status, Status::Unset);
    // The handler's spans are children of their attempt's.
    let handler = ended(&format!("handler {q}"), 2).await;
    for (child, attempt) in handler.iter().zip(&process) {
        assert_eq!(child.parent_span_id, attempt.span_context.span_id());
        assert_eq!(child.span_context.trace_id(), trace_id);
    }
}

/// The job's stored traceparent names the enqueue's span.
async fn assert_recorded(queue: &Queue<u32>, id: &echomq::JobId, enqueue: &SpanData) {
    let job = queue.jobs().get(id).await.unwrap().expect("the job");
    let expected = format!(
        "00-{}-{}-01",
        enqueue.span_context.trace_id(),
        enqueue.span_context.span_id()
    );
    assert_eq!(job.traceparent.as_deref(), Some(expected.as_str()));
}

async fn an_enqueue_in_a_request_and_every_attempt_share_one_trace(h: &Harness, name: &str) {
    exporter();
    let queue = h.queue::<u32>(name);
    let request = global::tracer("test").start(format!("request {name}"));
    let cx = Context::current_with_span(request);
    let enqueued = queue.enqueue(7).with_context(cx.clone()).await.unwrap();
    cx.span().end();
    let request = ended(&format!("request {name}"), 1).await.remove(0);
    let enqueue = ended(&format!("emq enqueue {name}"), 1).await.remove(0);
    assert_eq!(
        enqueue.span_context.trace_id(),
        request.span_context.trace_id()
    );
    assert_eq!(enqueue.parent_span_id, request.span_context.span_id());
    assert_eq!(
        attribute(&enqueue, "messaging.message.id"),
        Some(enqueued.id.as_str().to_string().into())
    );
    assert_recorded(&queue, &enqueued.id, &enqueue).await;
    fail_once_then_complete(&queue).await;
    assert_traced_attempts(&queue, &enqueue).await;
    h.check(&queue).await;
}

#[tokio::test]
async fn an_enqueue_in_a_request_and_every_attempt_share_one_trace_on_wire_4() {
    let h = Harness::server().await;
    an_enqueue_in_a_request_and_every_attempt_share_one_trace(&h, "otel-request-4").await;
}

#[tokio::test]
async fn an_enqueue_in_a_request_and_every_attempt_share_one_trace_on_wire_6() {
    let h = Harness::native().await;
    an_enqueue_in_a_request_and_every_attempt_share_one_trace(&h, "otel-request-6").await;
}

#[tokio::test]
async fn an_enqueue_without_a_parent_context_starts_the_trace() {
    exporter();
    let h = Harness::server().await;
    let name = "otel-root";
    let queue = h.queue::<u32>(name);
    let enqueued = queue.enqueue(1).await.unwrap();
    let enqueue = ended(&format!("emq enqueue {name}"), 1).await.remove(0);
    assert_eq!(enqueue.parent_span_id, SpanId::INVALID, "a root span");
    assert_recorded(&queue, &enqueued.id, &enqueue).await;
    fail_once_then_complete(&queue).await;
    assert_traced_attempts(&queue, &enqueue).await;
}

#[tokio::test]
async fn a_traceparent_set_by_hand_wins_over_the_current_context() {
    exporter();
    let h = Harness::server().await;
    let name = "otel-by-hand";
    let queue = h.queue::<u32>(name);
    let tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    let enqueued = queue.enqueue(NewJob::new(2).traceparent(tp)).await.unwrap();
    let job = queue
        .jobs()
        .get(&enqueued.id)
        .await
        .unwrap()
        .expect("the job");
    assert_eq!(job.traceparent.as_deref(), Some(tp));
    // The enqueue still has its span, in a trace of its own.
    ended(&format!("emq enqueue {name}"), 1).await;
    let claimed = queue
        .claim_one("w", Duration::from_secs(30))
        .await
        .unwrap()
        .expect("a job");
    assert_eq!(claimed.traceparent(), Some(tp));
}

#[tokio::test]
async fn a_bulk_enqueue_records_no_trace_and_its_attempts_have_no_span() {
    exporter();
    let h = Harness::server().await;
    let name = "otel-bulk";
    let queue = h.queue::<u32>(name);
    let request = global::tracer("test").start(format!("request {name}"));
    let cx = Context::current_with_span(request);
    let enqueued = queue
        .enqueue_bulk([1, 2])
        .with_context(cx.clone())
        .await
        .unwrap();
    cx.span().end();
    for job in &enqueued {
        let record = queue.jobs().get(&job.id).await.unwrap().expect("the job");
        assert_eq!(record.traceparent, None);
    }
    let worker = Worker::new(queue.clone(), |job: JobContext<u32>| async move {
        assert_eq!(job.traceparent(), None);
        Ok::<_, JobError>(())
    })
    .start();
    wait_for("the jobs to complete", BOUND, || async {
        queue.admin().counts().await.unwrap().completed == 2
    })
    .await;
    worker.shutdown(Duration::from_secs(5)).await;
    assert!(spans(&format!("emq process {name}")).is_empty());
    assert!(spans(&format!("emq enqueue {name}")).is_empty());
}
