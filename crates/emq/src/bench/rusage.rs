//! This process's CPU time, for `emq bench`'s client CPU per job.

/// User + system CPU seconds this process (all its threads) has used so
/// far, from `getrusage(RUSAGE_SELF)` (microsecond resolution); 0 where
/// there is no `getrusage`.
#[cfg(unix)]
#[allow(unsafe_code)]
pub(crate) fn cpu_seconds() -> f64 {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: `usage` is a valid, writable `rusage`; getrusage only fills
    // it in, and RUSAGE_SELF cannot fail on a valid pointer.
    let usage = unsafe {
        if libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) != 0 {
            return 0.0;
        }
        usage.assume_init()
    };
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    seconds(usage.ru_utime) + seconds(usage.ru_stime)
}

/// 0: no `getrusage` here.
#[cfg(not(unix))]
pub(crate) fn cpu_seconds() -> f64 {
    0.0
}

#[cfg(test)]
mod tests {
    #[test]
    fn cpu_time_grows_with_work() {
        let before = super::cpu_seconds();
        let mut x = 0u64;
        for i in 0..20_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        assert!(super::cpu_seconds() > before);
    }
}
