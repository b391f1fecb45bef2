//! A [`Handle`]'s stream calls (`RedisModule_StreamAdd`, the exact trim).

use super::{EventId, Handle, Kind, Str, WrongType};
use std::os::raw::c_int;
use std::ptr;
use valkey_module::raw;

const STREAM_ADD_AUTOID: c_int = 1;
const STREAM_TRIM_APPROX: c_int = 1;

impl Handle {
    /// Appends an entry at `id` (`XADD key id …`), or with an automatic id
    /// when `id` is none (or, should the stream's last id be higher, which
    /// a replay never meets); then, with `max`, trims to about `max`
    /// entries as `XADD key MAXLEN ~ max` does. Returns the entry's id,
    /// whether the trim removed entries, and the stream's length after.
    pub(crate) fn stream_add(
        &self,
        fields: &[Str],
        id: Option<EventId>,
        max: Option<i64>,
    ) -> Result<(EventId, bool, usize), WrongType> {
        self.expect(Kind::Stream)?;
        let mut added = raw::RedisModuleStreamID { ms: 0, seq: 0 };
        with_argv(fields.iter().map(|field| field.ptr), |argv| {
            let pairs = (argv.len() / 2) as i64;
            // SAFETY: a writable key holding a stream or nothing; `argv`
            // holds field/value pairs that live until the end of this call.
            unsafe {
                let add = api!(RedisModule_StreamAdd);
                let explicit = id.is_some_and(|id| {
                    added = raw::RedisModuleStreamID {
                        ms: id.ms,
                        seq: id.seq,
                    };
                    add(self.ptr, 0, &mut added, argv.as_mut_ptr(), pairs)
                        == raw::Status::Ok as c_int
                });
                if !explicit {
                    add(
                        self.ptr,
                        STREAM_ADD_AUTOID,
                        &mut added,
                        argv.as_mut_ptr(),
                        pairs,
                    );
                }
            };
        });
        self.touched(true);
        // SAFETY: the same key, still open for writing.
        unsafe {
            let trimmed = max.map_or(0, |max| {
                api!(RedisModule_StreamTrimByLength)(self.ptr, STREAM_TRIM_APPROX, max)
            });
            let len = api!(RedisModule_ValueLength)(self.ptr);
            let id = EventId {
                ms: added.ms,
                seq: added.seq,
            };
            Ok((id, trimmed > 0, len))
        }
    }

    /// Trims a stream to exactly its newest `len` entries (`XTRIM key
    /// MAXLEN len`); nothing when the key holds no stream.
    pub(crate) fn stream_trim_exact(&self, len: u64) {
        if self.kind() == Kind::Stream {
            let len = i64::try_from(len).unwrap_or(i64::MAX);
            // SAFETY: a writable stream key.
            let trimmed = unsafe { api!(RedisModule_StreamTrimByLength)(self.ptr, 0, len) };
            self.touched(trimmed > 0);
        }
    }
}

/// Runs `f` on the pointers `ptrs` as one array: on the stack for the
/// usual handful, on the heap beyond 32.
fn with_argv<R>(
    ptrs: impl Iterator<Item = *mut raw::RedisModuleString>,
    f: impl FnOnce(&mut [*mut raw::RedisModuleString]) -> R,
) -> R {
    let mut stack = [ptr::null_mut(); 32];
    let mut heap = Vec::new();
    let mut len = 0;
    for p in ptrs {
        if len < stack.len() {
            stack[len] = p;
        } else {
            if heap.is_empty() {
                heap.extend_from_slice(&stack);
            }
            heap.push(p);
        }
        len += 1;
    }
    if heap.is_empty() {
        f(&mut stack[..len])
    } else {
        f(&mut heap)
    }
}
