//! The control map, from the registry of controls: scope, function, keys
//! touched, effect, script and native command of each.

use crate::layout::{self, Nav};
use crate::state::App;
use axum::extract::State;
use echomq::Transition;
use echomq::protocol::control::Form;
use maud::{Markup, html};

/// `GET /controls`.
pub(crate) async fn page(State(app): State<App>) -> Markup {
    let body = html! {
        h1 { "Controls" }
        p.muted { "Every control of the control plane, from the registry both wires are built from." }
        div.scroll { table id="controls" {
            thead { tr { th { "Control" } th { "Scope" } th { "Function" } th { "Effect" } th { "Script" } th { "Native" } } }
            tbody {
                @for t in Transition::ALL {
                    @let control = t.control();
                    tr data-control=(t.name()) {
                        td { code { (t.name()) } }
                        td { (control.scope.name()) }
                        td { code { (control.functions.first().copied().unwrap_or("")) } }
                        td.wrap { (control.effect) }
                        td { code { (t.command(Form::Single).map(|c| c.script).unwrap_or("")) } }
                        td { code { (t.native()) } }
                    }
                }
            }
        } }
    };
    layout::page(&app, "Controls", Some(Nav::Controls), body)
}
