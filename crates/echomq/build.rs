//! Embeds every Lua script of `scripts/` (not `scripts/include/`) as
//! `SCRIPT_FILES: &[(name, source)]`, so the script book is built from the
//! registry of controls and the files on disk, with no list kept by hand.

use std::fmt::Write;
use std::path::Path;

fn main() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .expect("crates/echomq/scripts")
        .filter_map(|entry| {
            let path = entry.expect("a directory entry").path();
            let name = path
                .file_name()?
                .to_str()?
                .strip_suffix(".lua")?
                .to_string();
            path.is_file().then_some(name)
        })
        .collect();
    names.sort();
    let mut out = String::from("/// Every script file: its name (without `.lua`) and source.\n");
    out.push_str("pub(crate) const SCRIPT_FILES: &[(&str, &str)] = &[\n");
    for name in &names {
        let path = dir.join(format!("{name}.lua"));
        writeln!(
            out,
            "    ({name:?}, include_str!({:?})),",
            path.display().to_string()
        )
        .unwrap();
    }
    out.push_str("];\n");
    let target = Path::new(&std::env::var("OUT_DIR").expect("OUT_DIR")).join("script_files.rs");
    std::fs::write(target, out).expect("writing script_files.rs");
}
