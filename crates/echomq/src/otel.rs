//! OpenTelemetry traces across the queue (feature `otel`): the span of an
//! enqueue, whose context the job carries as its `traceparent`, and the
//! span of each attempt a worker runs, which continues it. Spans go to the
//! global tracer provider (`opentelemetry::global::tracer("echomq")`);
//! with none installed they are no-ops. See `docs/observability.md`.

use crate::error::Result;
use crate::job::{Claimed, Enqueued};
use echomq_protocol::trace::check_traceparent;
use opentelemetry::trace::{
    Link, SpanContext, SpanId, SpanKind, Status, TraceContextExt, TraceFlags, TraceId, TraceState,
    Tracer,
};
use opentelemetry::{Context, KeyValue, global};

/// The name of the tracer (the instrumentation scope).
const TRACER: &str = "echomq";
/// `messaging.system`'s value.
const SYSTEM: &str = "echomq";
/// The attribute of an attempt's number (failures so far + 1).
pub(crate) const ATTEMPT: &str = "messaging.echomq.attempt";

/// The attributes every span of a queue carries.
fn queue_attributes(queue: &str, operation: &'static str) -> Vec<KeyValue> {
    vec![
        KeyValue::new("messaging.system", SYSTEM),
        KeyValue::new("messaging.destination.name", queue.to_string()),
        KeyValue::new("messaging.operation.type", operation),
    ]
}

/// `span_context` as a W3C traceparent; `None` for an invalid context (no
/// trace to continue: nothing is recorded).
fn traceparent_of(span_context: &SpanContext) -> Option<String> {
    span_context.is_valid().then(|| {
        format!(
            "00-{}-{}-{:02x}",
            span_context.trace_id(),
            span_context.span_id(),
            span_context.trace_flags().to_u8()
        )
    })
}

/// The remote span context a traceparent names; `None` unless it follows
/// the protocol's rule (`echomq_protocol::trace`).
fn remote_context(traceparent: &str) -> Option<SpanContext> {
    check_traceparent(traceparent.as_bytes()).ok()?;
    let mut parts = traceparent.split('-').skip(1);
    let trace_id = TraceId::from_hex(parts.next()?).ok()?;
    let span_id = SpanId::from_hex(parts.next()?).ok()?;
    let flags = u8::from_str_radix(parts.next()?, 16).ok()?;
    Some(SpanContext::new(
        trace_id,
        span_id,
        TraceFlags::new(flags) & TraceFlags::SAMPLED,
        true,
        TraceState::default(),
    ))
}

/// The span of one enqueue: `emq enqueue <queue>`, a producer span, child
/// of the caller's current context.
pub(crate) struct EnqueueSpan {
    cx: Context,
}

impl EnqueueSpan {
    /// Starts the span under `Context::current()`.
    pub(crate) fn start(queue: &str) -> Self {
        let tracer = global::tracer(TRACER);
        let span = tracer
            .span_builder(format!("emq enqueue {queue}"))
            .with_kind(SpanKind::Producer)
            .with_attributes(queue_attributes(queue, "send"))
            .start_with_context(&tracer, &Context::current());
        Self {
            cx: Context::current_with_span(span),
        }
    }

    /// The span's context as the job's traceparent (none without a valid
    /// one: no provider and no trace around the call).
    pub(crate) fn traceparent(&self) -> Option<String> {
        traceparent_of(self.cx.span().span_context())
    }

    /// Ends the span with what the enqueue did: the job's id, or the error.
    pub(crate) fn end(self, outcome: &Result<Enqueued>) {
        let span = self.cx.span();
        match outcome {
            Ok(enqueued) => {
                span.set_attribute(KeyValue::new(
                    "messaging.message.id",
                    enqueued.id.as_str().to_string(),
                ));
                span.set_attribute(KeyValue::new(
                    "messaging.echomq.outcome",
                    enqueued.effect.as_str(),
                ));
            }
            Err(err) => span.set_status(Status::error(err.to_string())),
        }
        span.end();
    }
}

/// The span of one attempt of a job that carries a traceparent: `emq
/// process <queue>`, a consumer span whose parent is the enqueue's context
/// (so both share its trace id), linked to it too.
pub(crate) struct AttemptSpan {
    cx: Context,
}

impl AttemptSpan {
    /// Starts the span of `job`'s attempt; `None` for a job without a
    /// traceparent (or with one that does not parse): no span.
    pub(crate) fn start<T>(queue: &str, job: &Claimed<T>) -> Option<Self> {
        let remote = remote_context(job.traceparent()?)?;
        let parent = Context::new().with_remote_span_context(remote.clone());
        let tracer = global::tracer(TRACER);
        let mut attributes = queue_attributes(queue, "process");
        attributes.extend([
            KeyValue::new("messaging.message.id", job.id.as_str().to_string()),
            KeyValue::new(ATTEMPT, job.attempt() as i64),
        ]);
        let span = tracer
            .span_builder(format!("emq process {queue}"))
            .with_kind(SpanKind::Consumer)
            .with_links(vec![Link::with_context(remote)])
            .with_attributes(attributes)
            .start_with_context(&tracer, &parent);
        Some(Self {
            cx: parent.with_span(span),
        })
    }

    /// The context the handler runs in: spans it starts are children of
    /// the attempt's.
    pub(crate) fn context(&self) -> Context {
        self.cx.clone()
    }

    /// Ends the span: status Error with the message when the attempt
    /// failed (`failure`), unset otherwise.
    pub(crate) fn end(self, failure: Option<&str>) {
        let span = self.cx.span();
        if let Some(message) = failure {
            span.set_status(Status::error(message.to_string()));
        }
        span.end();
    }
}
