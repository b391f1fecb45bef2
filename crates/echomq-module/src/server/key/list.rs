//! A [`Handle`]'s list calls (`RedisModule_ListPush`, `ListGet`, `ListPop`).

use super::{Handle, Kind, Str, WrongType};
use std::os::raw::{c_int, c_long};
use valkey_module::raw;

const LIST_HEAD: c_int = 0;
const LIST_TAIL: c_int = 1;

impl Handle {
    /// Pushes `items` at the tail of a list, in order (`RPUSH`).
    pub(crate) fn list_push(&self, items: &[Str]) -> Result<(), WrongType> {
        self.expect(Kind::List)?;
        for item in items {
            // SAFETY: a writable key holding a list or nothing, and a live
            // string (the server takes a reference).
            unsafe { api!(RedisModule_ListPush)(self.ptr, LIST_TAIL, item.ptr) };
        }
        self.touched(!items.is_empty());
        Ok(())
    }

    /// Element `index` (from 0) of an open list that has it.
    fn list_get(&self, index: usize) -> Option<Str> {
        let index = c_long::try_from(index).ok()?;
        // SAFETY: an open list key; the returned string is ours to free.
        Str::adopt(self.ctx, unsafe {
            api!(RedisModule_ListGet)(self.ptr, index)
        })
    }

    /// At most `limit` elements from a list's head (`LRANGE key 0
    /// limit-1`).
    pub(crate) fn list_head(&self, limit: usize) -> Result<Vec<Vec<u8>>, WrongType> {
        let len = self.len(Kind::List)?.min(limit);
        // Read in order: the server steps its iterator from one to the next.
        Ok((0..len)
            .map_while(|index| self.list_get(index).map(|item| item.bytes()))
            .collect())
    }

    /// Pops at most `count` elements from a list's head (`LPOP key count`;
    /// an emptied list is deleted); returns how many it popped.
    pub(crate) fn list_pop(&self, count: usize) -> Result<usize, WrongType> {
        let len = self.len(Kind::List)?.min(count);
        let mut popped = 0;
        while popped < len {
            // SAFETY: a writable list key; the popped string is ours to free.
            let item = unsafe { api!(RedisModule_ListPop)(self.ptr, LIST_HEAD) };
            if Str::adopt(self.ctx, item).is_none() {
                break;
            }
            popped += 1;
        }
        self.touched(popped > 0);
        Ok(popped)
    }
}
