//! The `#[case]` attribute of `echomq-testkit` (re-exported there as
//! `echomq_testkit::case`): a case of a wire-parameterised suite is written
//! once, as `async fn name(h: &Harness)`, and its name appears nowhere
//! else (River's driver suite, `riverdrivertest.Exercise()`, registers
//! each case once in the same way).
//!
//! No `syn`: the attribute only needs the function's name, found by
//! walking the item's tokens, and writes its additions as source text.

use proc_macro::{TokenStream, TokenTree};

/// Registers the `async fn name(h: &Harness)` it is put on as a case of
/// the client's suite (`crates/echomq/tests/suite/`), keeping the function
/// as written. It adds, next to the function, a module of the same name
/// with two tests, each case individually filterable by its name:
///
/// - `name::on_wire_4`: the case on a server of the suite's default kind
///   (`Harness::server()`, wire 4);
/// - `name::on_wire_6`: the case on a server with the module loaded
///   (`Harness::native()`, wire 6);
///
/// and an entry of the distributed slice `crate::common::CASES`, read by
/// the cluster sweeps (`common::on_one_cluster`). `#[case(cluster)]`
/// marks a case that such a sweep runs; a module with a sweep runs every
/// case so marked under it in turn, on one cluster for the module.
///
/// `#[case(wire)]` is for a case that starts servers of its own (a
/// replica, a server with an AOF): put on `async fn name(wire: Wire)`, it
/// adds `name::on_wire_4` and `name::on_wire_6`, which call it with
/// `echomq::Wire::Script` and `echomq::Wire::Native`, and no sweep entry.
///
/// The expansion names `crate::common::{Harness, Case, CASES}` and
/// `::echomq_testkit::linkme`: it is for a test crate laid out as the
/// client's suite is.
#[proc_macro_attribute]
pub fn case(args: TokenStream, item: TokenStream) -> TokenStream {
    let (cluster, wire) = match args.to_string().trim() {
        "" => (false, false),
        "cluster" => (true, false),
        "wire" => (false, true),
        other => {
            return error(&format!(
                "#[case] takes nothing, `cluster` or `wire`, not `{other}`"
            ));
        }
    };
    let Some(name) = function_name(&item) else {
        return error(
            "#[case] goes on an `async fn name(h: &Harness)` (or `name(wire: Wire)` with `wire`)",
        );
    };
    let added = if wire {
        format!(
            r#"
mod {name} {{
    #[::tokio::test]
    async fn on_wire_4() {{
        super::{name}(::echomq::Wire::Script).await;
    }}

    #[::tokio::test]
    async fn on_wire_6() {{
        super::{name}(::echomq::Wire::Native).await;
    }}
}}
"#
        )
    } else {
        format!(
            r#"
mod {name} {{
    #[::tokio::test]
    async fn on_wire_4() {{
        super::{name}(&crate::common::Harness::server().await).await;
    }}

    #[::tokio::test]
    async fn on_wire_6() {{
        super::{name}(&crate::common::Harness::native().await).await;
    }}

    // linkme places the entry with `#[link_section]`, which the
    // workspace's `unsafe_code` lint counts.
    #[allow(unsafe_code)]
    #[::echomq_testkit::linkme::distributed_slice(crate::common::CASES)]
    #[linkme(crate = ::echomq_testkit::linkme)]
    static CASE: crate::common::Case = crate::common::Case {{
        module: ::core::module_path!(),
        name: "{name}",
        file: ::core::file!(),
        line: ::core::line!(),
        cluster: {cluster},
        run: |h| ::std::boxed::Box::pin(super::{name}(h)),
    }};
}}
"#
        )
    };
    let mut out = item;
    out.extend(
        added
            .parse::<TokenStream>()
            .expect("the case's tests parse"),
    );
    out
}

/// The name after `fn` among the item's top-level tokens, if it is an
/// `async fn`.
fn function_name(item: &TokenStream) -> Option<String> {
    let tokens: Vec<TokenTree> = item.clone().into_iter().collect();
    let at = tokens
        .iter()
        .position(|t| matches!(t, TokenTree::Ident(i) if i.to_string() == "fn"))?;
    let is_async = tokens[..at]
        .iter()
        .any(|t| matches!(t, TokenTree::Ident(i) if i.to_string() == "async"));
    match tokens.get(at + 1) {
        Some(TokenTree::Ident(name)) if is_async => Some(name.to_string()),
        _ => None,
    }
}

/// A `compile_error!` saying `message`.
fn error(message: &str) -> TokenStream {
    format!("::core::compile_error!({message:?});")
        .parse()
        .expect("compile_error parses")
}
