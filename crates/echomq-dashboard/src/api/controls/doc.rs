//! A control's entry of the OpenAPI document, from its row: the effect
//! as the description, the body's fields as a closed object schema (each
//! typed and ranged as [`fields`] checks it, arguments required).

use super::fields::{self, Field, FieldKind};
use super::table::{self, Served};
use echomq::Transition;
use utoipa::openapi::path::{
    HttpMethod, OperationBuilder, ParameterBuilder, ParameterIn, PathItem, Paths, PathsBuilder,
};
use utoipa::openapi::request_body::RequestBodyBuilder;
use utoipa::openapi::schema::{AdditionalProperties, ArrayBuilder, ObjectBuilder, Schema, Type};
use utoipa::openapi::{ContentBuilder, Ref, Required, ResponseBuilder};

/// The document's paths for `t`'s endpoint at `path`.
pub(super) fn paths(path: &str, t: Transition) -> Paths {
    let control = t.control();
    let mut operation = OperationBuilder::new()
        .tag("operating")
        .operation_id(Some(format!(
            "control_{}",
            table::verb(t).replace('-', "_")
        )))
        .summary(Some(format!(
            "{} ({})",
            control.verb,
            control.functions.join(", ")
        )))
        .description(Some(control.effect))
        .parameter(path_parameter("q", "The queue"));
    if table::served(t) == Served::Job {
        operation = operation.parameter(path_parameter("id", "The job"));
    }
    let body = RequestBodyBuilder::new()
        .required(Some(Required::False))
        .content(
            "application/json",
            ContentBuilder::new().schema(Some(schema(t))).build(),
        )
        .build();
    let error = ResponseBuilder::new()
        .description("A refusal: 400 a bad field, 403 not the token's, 404 no such job, 409 the protocol's refusal")
        .content(
            "application/json",
            ContentBuilder::new()
                .schema(Some(Ref::from_schema_name("ErrorBody")))
                .build(),
        );
    let operation = operation
        .request_body(Some(body))
        .response(
            "200",
            ResponseBuilder::new().description("What the library's call answered, as JSON"),
        )
        .response("default", error)
        .build();
    PathsBuilder::new()
        .path(path, PathItem::new(HttpMethod::Post, operation))
        .build()
}

fn path_parameter(name: &str, description: &str) -> ParameterBuilder {
    ParameterBuilder::new()
        .name(name)
        .parameter_in(ParameterIn::Path)
        .required(Required::True)
        .description(Some(description))
        .schema(Some(ObjectBuilder::new().schema_type(Type::String)))
}

/// The body's schema: an object of the row's fields, nothing else.
fn schema(t: Transition) -> Schema {
    let mut object = ObjectBuilder::new()
        .schema_type(Type::Object)
        .additional_properties(Some(AdditionalProperties::FreeForm(false)));
    for field in fields::fields(t) {
        if field.required {
            object = object.required(field.name.clone());
        }
        object = object.property(field.name.clone(), field_schema(&field));
    }
    object.build().into()
}

fn field_schema(field: &Field) -> Schema {
    let described = |kind: &str| Some(format!("{} ({kind})", field.word));
    match field.kind {
        FieldKind::Flag => ObjectBuilder::new()
            .schema_type(Type::Boolean)
            .description(described("a flag"))
            .build()
            .into(),
        FieldKind::Int { min, max } => ObjectBuilder::new()
            .schema_type(Type::Integer)
            .minimum(Some(min as f64))
            .maximum(Some(max as f64))
            .description(described("an integer"))
            .build()
            .into(),
        FieldKind::Delays => ArrayBuilder::new()
            .items(
                ObjectBuilder::new()
                    .schema_type(Type::Integer)
                    .minimum(Some(0.0)),
            )
            .min_items(Some(1))
            .description(described("delays in ms"))
            .build()
            .into(),
        FieldKind::Json => ObjectBuilder::new()
            .description(described("any JSON"))
            .build()
            .into(),
        FieldKind::Word(words) => ObjectBuilder::new()
            .schema_type(Type::String)
            .enum_values(Some(words.iter().copied()))
            .build()
            .into(),
        FieldKind::Text => ObjectBuilder::new()
            .schema_type(Type::String)
            .description(described("a string"))
            .build()
            .into(),
    }
}
