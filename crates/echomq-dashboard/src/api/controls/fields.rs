//! A control's body, derived from its row of the registry: each argument
//! and option is a field named in lower case (`MAX` → `max`), typed by
//! what it takes (a flag a boolean, an integer in its range, delays an
//! array of integers, a payload any JSON, the rest strings), arguments
//! required, options not; the row's exclusive, required-with and
//! together rules hold between them. A field the row lacks is refused,
//! naming it.

use super::table;
use echomq::Transition;
use echomq::protocol::control::Kind;
use serde_json::{Map, Value};

/// What a field takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FieldKind {
    /// `true` or `false` (an option without a value).
    Flag,
    /// A whole number in `[min, max]`.
    Int { min: u64, max: u64 },
    /// An array of whole numbers ≥ 0.
    Delays,
    /// Any JSON value (a payload).
    Json,
    /// One of these words.
    Word(&'static [&'static str]),
    /// A string (the server checks its form: an id, a key, a group…).
    Text,
}

/// One field of a control's body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Field {
    /// Its name: the argument's, or the option's word, in lower case.
    pub(crate) name: String,
    /// The row's word for it (the argument's name, or the option's word).
    pub(crate) word: &'static str,
    /// What it takes.
    pub(crate) kind: FieldKind,
    /// Whether the body must give it.
    pub(crate) required: bool,
}

/// A field refused: which, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BadField {
    /// The field (as the body names it).
    pub(crate) field: String,
    /// Why, in words.
    pub(crate) message: String,
}

fn bad(field: &str, message: impl Into<String>) -> BadField {
    BadField {
        field: field.to_string(),
        message: message.into(),
    }
}

fn kind_of(name: &str, kind: Kind) -> FieldKind {
    match kind {
        Kind::Int { min, max } => FieldKind::Int { min, max },
        Kind::Delays => FieldKind::Delays,
        Kind::Word(words) => FieldKind::Word(words),
        Kind::Text if name == "payload" => FieldKind::Json,
        _ => FieldKind::Text,
    }
}

/// The fields of `t`'s body: its row's arguments (less the job's `id`,
/// which the path gives for a job's control) and options, less those the
/// library sets itself ([`table::library_owned`]).
pub(crate) fn fields(t: Transition) -> Vec<Field> {
    let command = table::command(t);
    let owned = table::library_owned(t);
    let args = command
        .args
        .iter()
        .filter(|arg| !(arg.name == "id" && table::served(t) == table::Served::Job))
        .map(|arg| Field {
            name: arg.name.to_ascii_lowercase(),
            word: arg.name,
            kind: kind_of(arg.name, arg.kind),
            required: true,
        });
    let options = command
        .options
        .iter()
        .filter(|opt| !owned.iter().any(|(word, _)| *word == opt.word))
        .map(|opt| {
            let name = opt.word.to_ascii_lowercase();
            Field {
                kind: opt
                    .value
                    .map_or(FieldKind::Flag, |(_, k)| kind_of(&name, k)),
                name,
                word: opt.word,
                required: false,
            }
        });
    args.chain(options).collect()
}

/// A body checked against `t`'s row: its fields by name.
#[derive(Debug, Default)]
pub(crate) struct Body {
    values: Map<String, Value>,
}

impl Body {
    /// Whether the flag `name` is set.
    pub(crate) fn flag(&self, name: &str) -> bool {
        self.values.get(name) == Some(&Value::Bool(true))
    }

    /// The integer `name`, if given.
    pub(crate) fn int(&self, name: &str) -> Option<u64> {
        self.values.get(name).and_then(Value::as_u64)
    }

    /// The string `name`, if given.
    pub(crate) fn text(&self, name: &str) -> Option<&str> {
        self.values.get(name).and_then(Value::as_str)
    }

    /// The value `name` as given, if given.
    pub(crate) fn json(&self, name: &str) -> Option<&Value> {
        self.values.get(name)
    }

    /// The integers `name`, if given.
    pub(crate) fn ints(&self, name: &str) -> Option<Vec<u64>> {
        let items = self.values.get(name)?.as_array()?;
        Some(items.iter().filter_map(Value::as_u64).collect())
    }
}

/// `body` checked against `t`'s row (an empty body reads as `{}`).
pub(crate) fn parse(t: Transition, body: Value) -> Result<Body, BadField> {
    let values = match body {
        Value::Object(values) => values,
        Value::Null => Map::new(),
        _ => return Err(bad("", "the body is a JSON object")),
    };
    let fields = fields(t);
    if let Some(unknown) = values
        .keys()
        .find(|k| !fields.iter().any(|f| f.name == **k))
    {
        let known: Vec<&str> = fields.iter().map(|f| f.name.as_str()).collect();
        let known = match known.is_empty() {
            true => "it takes none".to_string(),
            false => format!("it takes {}", known.join(", ")),
        };
        return Err(bad(unknown, format!("unknown field {unknown}: {known}")));
    }
    for field in &fields {
        match values.get(&field.name) {
            None | Some(Value::Null) if field.required => {
                return Err(bad(&field.name, format!("missing field {}", field.name)));
            }
            None => {}
            Some(value) => check(field, value)?,
        }
    }
    let given = |word: &str| {
        fields
            .iter()
            .any(|f| f.word == word && values.get(&f.name).is_some_and(|v| given_value(f, v)))
    };
    let command = table::command(t);
    for group in command.exclusive {
        let set: Vec<&str> = group.iter().copied().filter(|w| given(w)).collect();
        if set.len() > 1 {
            let names: Vec<String> = set.iter().map(|w| w.to_ascii_lowercase()).collect();
            return Err(bad(
                &names[1],
                format!("{} exclude each other", names.join(" and ")),
            ));
        }
    }
    for (word, needed) in command.requires {
        if given(word) && !given(needed) {
            let (word, needed) = (word.to_ascii_lowercase(), needed.to_ascii_lowercase());
            return Err(bad(&needed, format!("{word} needs {needed}")));
        }
    }
    for (word, partner) in command.together {
        if given(word) != given(partner) {
            let missing = if given(word) { partner } else { word };
            let missing = missing.to_ascii_lowercase();
            let pair = format!(
                "{} and {}",
                partner.to_ascii_lowercase(),
                word.to_ascii_lowercase()
            );
            return Err(bad(&missing, format!("{pair} come together")));
        }
    }
    Ok(Body { values })
}

/// Whether `value` gives the field (a flag only when `true`; `null` never).
fn given_value(field: &Field, value: &Value) -> bool {
    match field.kind {
        FieldKind::Flag => value == &Value::Bool(true),
        _ => !value.is_null(),
    }
}

fn check(field: &Field, value: &Value) -> Result<(), BadField> {
    let name = field.name.as_str();
    let ok = match field.kind {
        FieldKind::Flag => value.is_boolean(),
        FieldKind::Int { min, max } => match value.as_u64() {
            Some(n) if (min..=max).contains(&n) => true,
            _ => return Err(bad(name, format!("{name} is an integer {min}–{max}"))),
        },
        FieldKind::Delays => value
            .as_array()
            .is_some_and(|items| !items.is_empty() && items.iter().all(|i| i.as_u64().is_some())),
        FieldKind::Json => true,
        FieldKind::Word(words) => value.as_str().is_some_and(|w| words.contains(&w)),
        FieldKind::Text => value.is_string(),
    };
    match (ok, field.kind) {
        (true, _) => Ok(()),
        (false, FieldKind::Flag) => Err(bad(name, format!("{name} is true or false"))),
        (false, FieldKind::Delays) => Err(bad(
            name,
            format!("{name} is an array of integers ≥ 0, at least one"),
        )),
        (false, FieldKind::Word(words)) => {
            Err(bad(name, format!("{name} is one of {}", words.join(", "))))
        }
        (false, _) => Err(bad(name, format!("{name} is a string"))),
    }
}
