//! Sessions: the cookie holds a random id (256 bits) and nothing else; the
//! session it names is kept here, with its own CSRF token, the grant it
//! signed in with (its name, role and queues: never the token), when it
//! ends, and the notices its actions left to show.
//!
//! A session ends [`IDLE`] after its last request, [`LIFETIME`] after it
//! began, at sign-out, or when [`MOST_SESSIONS`] newer ones push it out.
//! Signing in starts a new session (the old id is dropped), so an id
//! planted before sign-in never becomes a signed-in one.

use crate::grant::Grant;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A session ends this long after its last request.
pub(crate) const IDLE: Duration = Duration::from_secs(30 * 60);
/// A session ends this long after it began, however busy.
pub(crate) const LIFETIME: Duration = Duration::from_secs(12 * 3600);
/// Sessions kept at most; past it the least recently used goes (those not
/// signed in first).
const MOST_SESSIONS: usize = 10_000;
/// Notices one session keeps for its next pages.
const NOTICES_KEPT: usize = 8;
/// Random bytes in a session id and in a CSRF token.
const SECRET_BYTES: usize = 32;

/// A fresh random secret, hex-encoded.
pub(crate) fn new_secret() -> String {
    let mut bytes = [0u8; SECRET_BYTES];
    getrandom::fill(&mut bytes).expect("the operating system's random source");
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Equal in time that does not depend on where they differ.
pub(crate) fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// One session.
#[derive(Debug, Clone)]
struct Session {
    csrf: String,
    /// The grant of the token it signed in with; `None` before sign-in.
    grant: Option<Grant>,
    began: Instant,
    seen: Instant,
    /// `(id, text)`, newest last.
    notices: Vec<(String, String)>,
}

impl Session {
    fn live(&self, now: Instant) -> bool {
        now.duration_since(self.seen) < IDLE && now.duration_since(self.began) < LIFETIME
    }
}

/// What a request's session cookie names, when it names a live session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Current {
    /// The id (the cookie's value).
    pub(crate) id: String,
    /// The session's CSRF token.
    pub(crate) csrf: String,
    /// The grant of the token it signed in with (`None`: not signed in).
    pub(crate) grant: Option<Grant>,
}

/// Every live session of one dashboard.
#[derive(Debug, Default)]
pub(crate) struct Sessions {
    by_id: Mutex<HashMap<String, Session>>,
}

impl Sessions {
    /// The live session `id` names, marked as seen now.
    pub(crate) fn find(&self, id: &str) -> Option<Current> {
        let now = Instant::now();
        let mut by_id = self.lock();
        let session = by_id.get_mut(id)?;
        if !session.live(now) {
            by_id.remove(id);
            return None;
        }
        session.seen = now;
        Some(Current {
            id: id.to_string(),
            csrf: session.csrf.clone(),
            grant: session.grant.clone(),
        })
    }

    /// Whether session `id` is live, without marking it seen (a live page
    /// left open does not keep its session alive).
    pub(crate) fn is_live(&self, id: &str) -> bool {
        self.lock()
            .get(id)
            .is_some_and(|session| session.live(Instant::now()))
    }

    /// A new session, signed in with `grant` or not (`None`).
    pub(crate) fn start(&self, grant: Option<Grant>) -> Current {
        let now = Instant::now();
        let current = Current {
            id: new_secret(),
            csrf: new_secret(),
            grant,
        };
        let mut by_id = self.lock();
        if by_id.len() >= MOST_SESSIONS {
            by_id.retain(|_, s| s.live(now));
        }
        if by_id.len() >= MOST_SESSIONS {
            let oldest = by_id
                .iter()
                .min_by_key(|(_, s)| (s.grant.is_some(), s.seen))
                .map(|(id, _)| id.clone());
            if let Some(oldest) = oldest {
                by_id.remove(&oldest);
            }
        }
        by_id.insert(
            current.id.clone(),
            Session {
                csrf: current.csrf.clone(),
                grant: current.grant.clone(),
                began: now,
                seen: now,
                notices: Vec::new(),
            },
        );
        current
    }

    /// Ends session `id` (sign-out, or the old id at sign-in).
    pub(crate) fn end(&self, id: &str) {
        self.lock().remove(id);
    }

    /// Keeps `text` for session `id`'s next page; the notice's id, which
    /// the page's `done` names.
    pub(crate) fn leave_notice(&self, id: &str, text: String) -> Option<String> {
        let mut by_id = self.lock();
        let session = by_id.get_mut(id)?;
        let notice = new_secret()[..16].to_string();
        if session.notices.len() == NOTICES_KEPT {
            session.notices.remove(0);
        }
        session.notices.push((notice.clone(), text));
        Some(notice)
    }

    /// The text of notice `notice` that session `id` was left; `None` for
    /// any other (a `done` made up by a link shows nothing).
    pub(crate) fn notice(&self, id: &str, notice: &str) -> Option<String> {
        let by_id = self.lock();
        let session = by_id.get(id)?;
        session
            .notices
            .iter()
            .find(|(n, _)| n == notice)
            .map(|(_, text)| text.clone())
    }

    /// Sessions kept now (live or not yet swept).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Session>> {
        // A panic while holding it leaves a map that is still whole.
        self.by_id
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_fresh_and_long() {
        assert_ne!(new_secret(), new_secret());
        assert_eq!(new_secret().len(), 2 * SECRET_BYTES);
    }

    #[test]
    fn same_compares_whole_values() {
        assert!(same(b"abc", b"abc"));
        assert!(!same(b"abc", b"abd"));
        assert!(!same(b"abc", b"ab"));
    }

    #[test]
    fn a_session_is_found_until_it_ends() {
        let sessions = Sessions::default();
        let a = sessions.start(None);
        let b = sessions.start(Some(Grant::anonymous(false)));
        assert_ne!(a.id, b.id);
        assert_ne!(a.csrf, b.csrf);
        assert_eq!(sessions.find(&a.id), Some(a.clone()));
        assert!(sessions.find(&b.id).unwrap().grant.is_some());
        assert!(sessions.is_live(&a.id));
        sessions.end(&a.id);
        assert!(!sessions.is_live(&a.id));
        assert_eq!(sessions.find(&a.id), None);
        assert_eq!(sessions.find("not-an-id"), None);
    }

    #[test]
    fn a_signed_in_session_keeps_its_grant_and_nothing_of_the_token() {
        let sessions = Sessions::default();
        let grant = Grant {
            name: "web".into(),
            role: crate::grant::AccessRole::Reader,
            queues: vec!["emails".into()],
        };
        let signed_in = sessions.start(Some(grant.clone()));
        assert_eq!(sessions.find(&signed_in.id).unwrap().grant, Some(grant));
        // What a session keeps, whole: no field could hold a token.
        let kept = format!("{:?}", sessions.lock()[&signed_in.id]);
        for field in ["csrf", "grant", "began", "seen", "notices"] {
            assert!(kept.contains(field), "{kept}");
        }
        assert!(!kept.contains("token"), "{kept}");
    }

    #[test]
    fn an_idle_session_is_gone() {
        let sessions = Sessions::default();
        let a = sessions.start(Some(Grant::anonymous(false)));
        sessions.lock().get_mut(&a.id).unwrap().seen -= IDLE;
        assert_eq!(sessions.find(&a.id), None);
        let b = sessions.start(Some(Grant::anonymous(false)));
        sessions.lock().get_mut(&b.id).unwrap().began -= LIFETIME;
        assert_eq!(sessions.find(&b.id), None);
    }

    #[test]
    fn sessions_are_bounded_and_the_signed_out_go_first() {
        let sessions = Sessions::default();
        let kept = sessions.start(Some(Grant::anonymous(false)));
        for _ in 0..MOST_SESSIONS + 10 {
            sessions.start(None);
        }
        assert_eq!(sessions.len(), MOST_SESSIONS);
        assert!(sessions.find(&kept.id).is_some());
    }

    #[test]
    fn only_notices_left_to_the_session_are_shown() {
        let sessions = Sessions::default();
        let a = sessions.start(None);
        let b = sessions.start(None);
        let notice = sessions.leave_notice(&a.id, "paused q".into()).unwrap();
        assert_eq!(sessions.notice(&a.id, &notice).as_deref(), Some("paused q"));
        assert_eq!(sessions.notice(&b.id, &notice), None);
        assert_eq!(sessions.notice(&a.id, "made-up"), None);
        for n in 0..NOTICES_KEPT {
            sessions.leave_notice(&a.id, format!("n{n}"));
        }
        assert_eq!(sessions.notice(&a.id, &notice), None);
    }
}
