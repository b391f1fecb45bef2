//! A [`Handle`]'s string calls: the value, and `INCRBY`'s twin.

use super::{Handle, Kind, READ, WRITE, WrongType};
use valkey_module::raw;

impl Handle {
    /// A string value (`GET`).
    pub(crate) fn string_get(&self) -> Result<Option<Vec<u8>>, WrongType> {
        if !self.expect(Kind::String)? {
            return Ok(None);
        }
        let mut len = 0usize;
        // SAFETY: an open string key; DMA for reading, copied out at once.
        Ok(unsafe {
            let data = api!(RedisModule_StringDMA)(self.ptr, &mut len, READ);
            (!data.is_null()).then(|| std::slice::from_raw_parts(data.cast::<u8>(), len).to_vec())
        })
    }

    /// `INCRBY` in place: the stored integer plus `by`, written over the
    /// old digits. `Ok(None)` when the value is not an integer (or would
    /// overflow), which `INCRBY` refuses.
    pub(crate) fn string_incr(&self, by: i64) -> Result<Option<i64>, WrongType> {
        let current = match self.string_get()? {
            None => 0,
            // Only the canonical form INCR takes: no sign, spaces or zeros.
            Some(text) => match std::str::from_utf8(&text)
                .ok()
                .and_then(|t| t.parse::<i64>().ok())
            {
                Some(n) if n.to_string().as_bytes() == text.as_slice() => n,
                _ => return Ok(None),
            },
        };
        let Some(next) = current.checked_add(by) else {
            return Ok(None);
        };
        let digits = next.to_string();
        // SAFETY: a writable string key (or an absent one, which Truncate
        // creates); the DMA pointer is taken after the resize and `len`
        // bytes are writable from it.
        unsafe {
            api!(RedisModule_StringTruncate)(self.ptr, digits.len());
            let mut len = 0usize;
            let data = api!(RedisModule_StringDMA)(self.ptr, &mut len, READ | WRITE);
            if data.is_null() || len != digits.len() {
                return Ok(None);
            }
            std::slice::from_raw_parts_mut(data.cast::<u8>(), len)
                .copy_from_slice(digits.as_bytes());
        }
        self.touched(true);
        Ok(Some(next))
    }
}
