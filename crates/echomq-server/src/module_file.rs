//! Where the built EchoMQ module (`libechomq_module.so`) is, for embedded
//! servers to load.

use std::path::PathBuf;

/// Environment variable naming the EchoMQ module (`libechomq_module.so`) to
/// load into embedded servers.
pub const MODULE_ENV: &str = "EMQ_MODULE";

/// The EchoMQ module to load into an embedded server, when one was built:
/// `$EMQ_MODULE`, else `libechomq_module.so` beside the running executable
/// (cargo puts `emq` and the module in the same `target/<profile>/`), else
/// `target/release/` then `target/debug/` under the current directory or
/// an ancestor. `None` when there is none: the server runs without it and
/// wire 4 works as ever.
pub fn built_module() -> Option<PathBuf> {
    const FILE: &str = "libechomq_module.so";
    if let Some(path) = std::env::var_os(MODULE_ENV) {
        return Some(PathBuf::from(path)).filter(|path| path.is_file());
    }
    let beside_exe = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|dir| dir.join(FILE)));
    let under_cwd = std::env::current_dir().ok().into_iter().flat_map(|cwd| {
        cwd.ancestors()
            .flat_map(|root| {
                ["release", "debug"].map(|profile| root.join("target").join(profile).join(FILE))
            })
            .collect::<Vec<_>>()
    });
    beside_exe
        .into_iter()
        .chain(under_cwd)
        .find(|path| path.is_file())
}
