//! The numbers the key API takes and gives: integers as decimal text
//! ([`Digits`]), stream entry ids ([`EventId`]) and sorted-set score
//! bounds ([`Bound`]).

/// The decimal digits of an integer, kept on the stack: the per-job
/// numbers of the hot paths (a token, a priority) without an allocation.
pub(crate) struct Digits {
    /// Room for u64::MAX, and for i64::MIN with its sign.
    text: [u8; 21],
    start: usize,
}

impl Digits {
    /// The digits of `n`.
    pub(crate) fn of(n: u64) -> Self {
        let mut text = [0u8; 21];
        let mut start = text.len();
        let mut rest = n;
        loop {
            start -= 1;
            text[start] = b'0' + (rest % 10) as u8;
            rest /= 10;
            if rest == 0 {
                return Self { text, start };
            }
        }
    }

    /// The digits of `n`, after a `-` when negative.
    pub(crate) fn signed(n: i64) -> Self {
        let mut digits = Self::of(n.unsigned_abs());
        if n < 0 {
            digits.start -= 1;
            digits.text[digits.start] = b'-';
        }
        digits
    }

    /// The digits as bytes.
    pub(crate) fn as_bytes(&self) -> &[u8] {
        &self.text[self.start..]
    }
}

/// A stream entry's id, `<ms>-<seq>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct EventId {
    pub ms: u64,
    pub seq: u64,
}

impl EventId {
    /// The id after this one, as `XADD *` takes it within one millisecond.
    pub(crate) fn next(self) -> Self {
        match self.seq.checked_add(1) {
            Some(seq) => Self { ms: self.ms, seq },
            None => Self {
                ms: self.ms.saturating_add(1),
                seq: 0,
            },
        }
    }

    /// Parses `<ms>-<seq>`.
    pub(crate) fn parse(text: &[u8]) -> Option<Self> {
        let text = std::str::from_utf8(text).ok()?;
        let (ms, seq) = text.split_once('-')?;
        Some(Self {
            ms: ms.parse().ok()?,
            seq: seq.parse().ok()?,
        })
    }
}

impl std::fmt::Display for EventId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}", self.ms, self.seq)
    }
}

/// Bounds of a score range: a value and whether it is excluded.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bound {
    pub score: f64,
    pub exclusive: bool,
}

impl Bound {
    /// Every score from the lowest.
    pub(crate) const LOWEST: Bound = Bound {
        score: f64::NEG_INFINITY,
        exclusive: false,
    };
    /// Every score to the highest.
    pub(crate) const HIGHEST: Bound = Bound {
        score: f64::INFINITY,
        exclusive: false,
    };

    /// Up to and including `score`.
    pub(crate) fn upto(score: f64) -> Self {
        Self {
            score,
            exclusive: false,
        }
    }

    /// From `score` on, included (a lower bound).
    pub(crate) fn from(score: f64) -> Self {
        Self {
            score,
            exclusive: false,
        }
    }

    /// Up to but excluding `score`.
    pub(crate) fn below(score: f64) -> Self {
        Self {
            score,
            exclusive: true,
        }
    }
}
