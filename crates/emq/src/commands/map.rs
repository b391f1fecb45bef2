//! `emq controls`: the control map, read from the registry of controls
//! (`echomq::Transition::control`). One row per control grouped by scope,
//! one control in full, the same as JSON, or the README's table as
//! markdown. Needs no server.

use super::{out, out_json};
use crate::cli::{ControlsArgs, Global};
use crate::error::CliError;
use crate::table::{Align, Table};
use echomq::Transition;
use echomq::protocol::control::Form;
use echomq::protocol::{Command, Control, Scope};
use serde::Serialize;

/// Characters of an effect per line in the map's table.
const EFFECT_WIDTH: usize = 38;
/// Characters of the keys touched per line in the map's table.
const KEYS_WIDTH: usize = 30;

/// `emq controls [NAME] [--markdown]`.
pub(crate) async fn run(args: &ControlsArgs, global: &Global) -> Result<(), CliError> {
    let base = format!("{}:{{q}}", global.prefix);
    match &args.name {
        Some(name) => {
            let transition = Transition::named(name).ok_or_else(|| unknown(name))?;
            let detail = Detail::of(transition, &base);
            if global.json {
                out_json(&detail)
            } else {
                out(&detail.render())
            }
        }
        None if global.json => out_json(&rows(&base)),
        None if args.markdown => out(&markdown()),
        None => out(&map(&base)),
    }
}

/// A name no control answers to: the error lists the names.
fn unknown(name: &str) -> CliError {
    let names: Vec<&str> = Transition::ALL.iter().map(|t| t.name()).collect();
    CliError::usage(format!(
        "no control is named {name:?}; the controls are {}",
        names.join(", ")
    ))
}

/// One control of the map, as `emq controls --json` lists it.
#[derive(Debug, Serialize)]
struct Row {
    name: &'static str,
    verb: &'static str,
    scope: &'static str,
    /// The library function that sends it (the first of `functions`).
    function: &'static str,
    functions: &'static [&'static str],
    /// The keys it touches, fixed keys then a job's keys, as named under
    /// the prefix for a queue `q`.
    keys: Vec<String>,
    /// The channels it publishes on.
    channels: Vec<String>,
    /// Whether a durability level above memory waits for its write.
    durable: bool,
    effect: &'static str,
    /// The single form's script file.
    script: String,
    /// The single form's native command.
    native: &'static str,
    /// The bulk form, where there is one.
    bulk: Option<BulkForm>,
    events: &'static [&'static str],
}

/// A control's bulk form: its script file and native command.
#[derive(Debug, Serialize)]
struct BulkForm {
    script: String,
    native: &'static str,
}

impl Row {
    fn of(transition: Transition, base: &str) -> Self {
        let control = transition.control();
        Self {
            name: transition.name(),
            verb: control.verb,
            scope: control.scope.name(),
            function: control.functions[0],
            functions: control.functions,
            keys: keys(control, base),
            channels: channels(control, base),
            durable: control.durable,
            effect: control.effect,
            script: format!("{}.lua", control.command.script),
            native: control.command.native,
            bulk: control.bulk.as_ref().map(|bulk| BulkForm {
                script: format!("{}.lua", bulk.script),
                native: bulk.native,
            }),
            events: control.events,
        }
    }
}

/// The keys `control` touches: its fixed keys (the base names the queue
/// and holds nothing), then a job's keys.
fn keys(control: &Control, base: &str) -> Vec<String> {
    let fixed = control.keys.iter().filter_map(|key| match key.name() {
        "base" => None,
        name => Some(format!("{base}:{name}")),
    });
    let job = control
        .job_keys
        .iter()
        .map(|key| format!("{base}{}", key.pattern()));
    fixed.chain(job).collect()
}

fn channels(control: &Control, base: &str) -> Vec<String> {
    let cancel = control.publishes_cancel.then(|| format!("{base}:cancel"));
    let outcome = control.publishes_outcome.then(|| format!("{base}:outcome"));
    cancel.into_iter().chain(outcome).collect()
}

fn rows(base: &str) -> Vec<Row> {
    Transition::ALL
        .iter()
        .map(|transition| Row::of(*transition, base))
        .collect()
}

/// The map as text: one table, its rows grouped under a heading per scope.
fn map(base: &str) -> String {
    let keys_heading = format!("keys touched ({base}:…)");
    let mut table = Table::new([Align::Left]);
    table.row([
        "control",
        "library function",
        keys_heading.as_str(),
        "effect",
        "wire 4",
        "wire 6",
    ]);
    // The table's line where each scope's first row starts.
    let mut headings: Vec<(usize, Scope)> = Vec::new();
    let mut line = 1;
    for scope in Scope::ALL {
        headings.push((line, scope));
        for row in rows(base).iter().filter(|row| row.scope == scope.name()) {
            let cells = map_cells(row, base);
            line += cells
                .iter()
                .map(|cell| cell.lines().count())
                .max()
                .unwrap_or(1);
            table.row(cells);
        }
    }
    let mut text = String::new();
    for (n, rendered) in table.render().lines().enumerate() {
        if let Some((_, scope)) = headings.iter().find(|(at, _)| *at == n) {
            text.push_str(&format!("\n{}\n", scope.title().to_uppercase()));
        } else if n > 1 && !rendered.starts_with(' ') {
            // Rows of several lines read apart.
            text.push('\n');
        }
        text.push_str(rendered);
        text.push('\n');
    }
    text.push_str(&format!(
        "\nkeys are named for a queue q under the prefix {}; `emq controls <name>` shows one control in full\n",
        base.trim_end_matches(":{q}")
    ));
    text
}

/// The cells of `row` in the map's table.
fn map_cells(row: &Row, base: &str) -> [String; 6] {
    let under = |key: &String| key[base.len() + 1..].to_string();
    let mut keys: Vec<String> = row.keys.iter().map(under).collect();
    keys.extend(
        row.channels
            .iter()
            .map(|c| format!("{} (channel)", under(c))),
    );
    let mut scripts = vec![row.script.clone()];
    let mut natives = vec![row.native.to_string()];
    if let Some(bulk) = &row.bulk {
        scripts.push(bulk.script.clone());
        natives.push(bulk.native.to_string());
    }
    [
        row.name.to_string(),
        row.functions.join("\n"),
        wrap(&keys.join(" "), KEYS_WIDTH),
        wrap(row.effect, EFFECT_WIDTH),
        scripts.join("\n"),
        natives.join("\n"),
    ]
}

/// `text` broken at spaces into lines of at most `width` characters (a
/// longer word stands alone).
fn wrap(text: &str, width: usize) -> String {
    let mut lines: Vec<String> = Vec::new();
    for word in text.split(' ') {
        match lines.last_mut() {
            Some(line) if line.chars().count() + 1 + word.chars().count() <= width => {
                line.push(' ');
                line.push_str(word);
            }
            _ => lines.push(word.to_string()),
        }
    }
    lines.join("\n")
}

/// Where each scope is written up for users.
fn scope_doc(scope: Scope) -> &'static str {
    match scope {
        Scope::Spine => "docs/protocol.md",
        Scope::Time => "docs/time.md",
        Scope::InHand => "docs/worker.md",
        Scope::Queue | Scope::Job => "docs/operator.md",
        Scope::Flow => "docs/flow-control.md",
        Scope::Group => "docs/groups.md",
        Scope::Dependencies => "docs/flows.md",
    }
}

/// The README's table of controls, as markdown.
pub(crate) fn markdown() -> String {
    let mut text = String::from(
        "| scope | control | library function | what it does | wire 4 | wire 6 |\n| --- | --- | --- | --- | --- | --- |\n",
    );
    for scope in Scope::ALL {
        let mut first = true;
        for transition in Transition::ALL
            .iter()
            .filter(|t| t.control().scope == scope)
        {
            let control = transition.control();
            let scope_cell = if first {
                format!("{} ([{doc}]({doc}))", scope.title(), doc = scope_doc(scope))
            } else {
                String::new()
            };
            first = false;
            let code = |items: Vec<String>| {
                items
                    .iter()
                    .map(|item| format!("`{item}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let forms: Vec<&Command> = control.commands().map(|(_, c)| c).collect();
            text.push_str(&format!(
                "| {scope_cell} | `{}` | {} | {} | {} | {} |\n",
                transition.name(),
                code(control.functions.iter().map(|f| f.to_string()).collect()),
                control.effect,
                code(forms.iter().map(|c| format!("{}.lua", c.script)).collect()),
                code(forms.iter().map(|c| c.native.to_string()).collect()),
            ));
        }
    }
    text
}

/// One control in full, as `emq controls <name>` shows it.
#[derive(Debug, Serialize)]
struct Detail {
    #[serde(flatten)]
    row: Row,
    commands: Vec<CommandDetail>,
}

/// One command of a control in full.
#[derive(Debug, Serialize)]
struct CommandDetail {
    form: &'static str,
    native: &'static str,
    script: String,
    synopsis: String,
    args: Vec<ArgDetail>,
    options: Vec<ArgDetail>,
    /// Groups of option words: of each, at most one may be given.
    exclusive: &'static [&'static [&'static str]],
    reply: &'static str,
    refusals: Vec<RefusalDetail>,
    flags: &'static str,
}

/// An argument or option: how it is written and what it takes.
#[derive(Debug, Serialize)]
struct ArgDetail {
    name: String,
    takes: String,
}

/// A refusal: its code (and `BADARG`'s name) and when it is answered.
#[derive(Debug, Serialize)]
struct RefusalDetail {
    code: String,
    when: String,
}

impl Detail {
    fn of(transition: Transition, base: &str) -> Self {
        let commands = transition
            .control()
            .commands()
            .map(|(form, command)| CommandDetail::of(form, command))
            .collect();
        Self {
            row: Row::of(transition, base),
            commands,
        }
    }

    fn render(&self) -> String {
        let row = &self.row;
        let mut text = format!(
            "{} ({}), {}\n  {}\n\n",
            row.name,
            row.verb,
            scope_title(row.scope),
            row.effect
        );
        let mut about = Table::new([Align::Left]);
        about.row(["functions", &row.functions.join(", ")]);
        about.row(["keys", &row.keys.join("\n")]);
        if !row.channels.is_empty() {
            about.row(["publishes on", &row.channels.join("\n")]);
        }
        let events = if row.events.is_empty() {
            "none".to_string()
        } else {
            row.events.join(", ")
        };
        about.row(["events", events.as_str()]);
        let durable = if row.durable {
            "waits for the connector's durability level"
        } else {
            "answers at once, whatever the durability level"
        };
        about.row(["durability", durable]);
        text.push_str(&about.render());
        for command in &self.commands {
            text.push_str(&format!("\n{}\n", command.synopsis));
            let mut table = Table::new([Align::Left]);
            table.row(["  wire 4", &format!("{} (FCALL)", command.script)]);
            table.row([
                "  wire 6",
                &format!("{} ({})", command.native, command.flags),
            ]);
            for arg in command.args.iter().chain(&command.options) {
                table.row([format!("  {}", arg.name), arg.takes.clone()]);
            }
            table.row(["  reply", command.reply]);
            let refusals: Vec<String> = command
                .refusals
                .iter()
                .map(|r| format!("{}: {}", r.code, r.when))
                .collect();
            table.row(["  refusals".to_string(), refusals.join("\n")]);
            text.push_str(&table.render());
        }
        text
    }
}

fn scope_title(name: &str) -> &'static str {
    Scope::ALL
        .iter()
        .find(|scope| scope.name() == name)
        .map_or("", |scope| scope.title())
}

impl CommandDetail {
    fn of(form: Form, command: &'static Command) -> Self {
        // A bulk form's head comes before its groups.
        let args = command
            .head
            .iter()
            .chain(command.args)
            .map(|arg| ArgDetail {
                name: arg.name.to_string(),
                takes: arg.kind.describe(),
            })
            .collect();
        let options = command
            .options
            .iter()
            .map(|opt| {
                let mut option = match command.needs(opt.word) {
                    Some(needed) => format!("option, with {needed}"),
                    None => "option".into(),
                };
                for (word, partner) in command.together {
                    if *word == opt.word {
                        option.push_str(&format!(", only with {partner}"));
                    } else if *partner == opt.word {
                        option.push_str(&format!(", only with {word}"));
                    }
                }
                match opt.value {
                    Some((placeholder, kind)) => ArgDetail {
                        name: format!("{} {placeholder}", opt.word),
                        takes: format!("{option}: {}", kind.describe()),
                    },
                    None => ArgDetail {
                        name: opt.word.to_string(),
                        takes: format!("{option}: a flag"),
                    },
                }
            })
            .chain(command.tail.map(|tail| {
                let takes: Vec<String> = tail
                    .args
                    .iter()
                    .map(|arg| format!("{} {}", arg.name, arg.kind.describe()))
                    .collect();
                ArgDetail {
                    name: tail.synopsis(),
                    takes: format!(
                        "closing clause, after the groups: {}; {}",
                        tail.effect,
                        takes.join(", ")
                    ),
                }
            }))
            .collect();
        Self {
            form: match form {
                Form::Single => "single",
                Form::Bulk => "bulk",
            },
            native: command.native,
            script: format!("{}.lua", command.script),
            synopsis: command.synopsis(form),
            args,
            options,
            exclusive: command.exclusive,
            reply: command.reply,
            refusals: command
                .refusals(form)
                .into_iter()
                .map(|(code, when)| RefusalDetail { code, when })
                .collect(),
            flags: command.flags,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use echomq::protocol::control::JobKey;

    #[test]
    fn wrap_breaks_at_spaces_within_the_width() {
        assert_eq!(wrap("one two three", 7), "one two\nthree");
        assert_eq!(wrap("a longword", 3), "a\nlongword");
    }

    #[test]
    fn keys_are_named_under_the_prefix_without_the_base() {
        let keys = keys(Transition::Get.control(), "emq:{q}");
        assert_eq!(keys, ["emq:{q}:job:<id>", "emq:{q}:logs:<id>"]);
        let claim = keys_of(Transition::Claim);
        assert!(claim.contains(&"emq:{q}:pending".to_string()));
        assert!(!claim.contains(&"emq:{q}".to_string()));
    }

    fn keys_of(transition: Transition) -> Vec<String> {
        keys(transition.control(), "emq:{q}")
    }

    #[test]
    fn the_job_key_pattern_follows_the_keyspace() {
        assert_eq!(JobKey::Hash.pattern(), ":job:<id>");
    }
}
