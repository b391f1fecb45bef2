//! Hash maps keyed by short byte strings (key names, job ids, field names),
//! hashed a word at a time the way rustc's `FxHasher` does instead of by
//! the standard library's SipHash: the maps live for one command, and
//! SipHash's resistance to chosen keys would cost more per lookup than the
//! rest of the lookup.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

/// The multiplier of rustc's `FxHasher`.
pub(crate) const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

/// A word-at-a-time multiplicative hash (rustc's `FxHasher`).
#[derive(Clone, Copy, Default)]
pub(crate) struct WordHash(u64);

impl WordHash {
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(SEED);
    }
}

impl Hasher for WordHash {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            self.add(u64::from_le_bytes(chunk.try_into().unwrap_or_default()));
        }
        let mut tail = [0u8; 8];
        let rest = chunks.remainder();
        tail[..rest.len()].copy_from_slice(rest);
        self.add(u64::from_le_bytes(tail));
    }

    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }
}

/// A `HashMap` hashed by [`WordHash`].
pub(crate) type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<WordHash>>;

/// A `HashSet` hashed by [`WordHash`].
pub(crate) type FastSet<K> = HashSet<K, BuildHasherDefault<WordHash>>;
