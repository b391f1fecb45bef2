//! What a caller may do (docs/http.md, "Tokens and roles"): a [`Grant`]
//! names its holder, its [`AccessRole`] and the queues it may touch (names
//! or globs). The API and the dashboard ask it the one question
//! [`Grant::allows`] answers; the tokens file (or, without one, the
//! server's flags) decides which grant a request carries.

use echomq::Transition;
use echomq::acl::Role;

/// What a token's holder does with its queues.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AccessRole {
    /// Every read of its queues: queues, jobs, logs, outcomes, events.
    Reader,
    /// A reader's reads, enqueue, wait for outcomes.
    Producer,
    /// A reader's reads, claim, and the worker's calls on the jobs it
    /// holds.
    Worker,
    /// Everything: every control of the registry.
    Operator,
}

impl AccessRole {
    /// Every role, least first.
    pub const ALL: [AccessRole; 4] = [
        AccessRole::Reader,
        AccessRole::Producer,
        AccessRole::Worker,
        AccessRole::Operator,
    ];

    /// Its name in a tokens file: `reader`, `producer`, `worker`,
    /// `operator`.
    pub fn name(self) -> &'static str {
        match self {
            AccessRole::Reader => "reader",
            AccessRole::Producer => "producer",
            AccessRole::Worker => "worker",
            AccessRole::Operator => "operator",
        }
    }

    /// The role named `name`; `None` for a word no role has.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|role| role.name() == name)
    }

    /// Whether the role may do `need` (on a queue it may touch).
    pub fn allows(self, need: Need) -> bool {
        match (self, need) {
            (AccessRole::Operator, _) | (_, Need::Read) => true,
            (AccessRole::Producer, Need::Produce) | (AccessRole::Worker, Need::Work) => true,
            (AccessRole::Producer, Need::Control(t)) => Role::Producer.sends(t),
            (AccessRole::Worker, Need::Control(t)) => Role::Worker.sends(t),
            _ => false,
        }
    }
}

/// What a request needs to do on one queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// Read: queues, jobs, logs, outcomes, events, metrics.
    Read,
    /// Enqueue (and wait for what it enqueued).
    Produce,
    /// Claim, and the worker's calls on a job it holds.
    Work,
    /// Send this control.
    Control(Transition),
}

/// Who a request is and what it may do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    /// The holder's name, as logged (never the token).
    pub name: String,
    /// What it may do.
    pub role: AccessRole,
    /// The queues it may touch: names, or globs (`*` any run of
    /// characters, `?` one).
    pub queues: Vec<String>,
}

impl Grant {
    /// The grant of every request to a server without tokens: an
    /// operator of every queue, or a reader when `read_only`.
    pub fn anonymous(read_only: bool) -> Self {
        Grant {
            name: "anonymous".into(),
            role: if read_only {
                AccessRole::Reader
            } else {
                AccessRole::Operator
            },
            queues: vec!["*".into()],
        }
    }

    /// Whether it may touch `queue` at all (see it listed, read it).
    pub fn may_see(&self, queue: &str) -> bool {
        self.queues
            .iter()
            .any(|pattern| glob_matches(pattern, queue))
    }

    /// Whether it may do `need` on `queue`.
    pub fn allows(&self, queue: &str, need: Need) -> bool {
        self.may_see(queue) && self.role.allows(need)
    }
}

/// Whether `name` matches `pattern`: `*` matches any run of characters
/// (none included), `?` exactly one, anything else itself.
pub fn glob_matches(pattern: &str, name: &str) -> bool {
    let (pattern, name): (Vec<char>, Vec<char>) =
        (pattern.chars().collect(), name.chars().collect());
    // The classic two-pointer match with one backtrack point: linear in
    // practice, never exponential.
    let (mut p, mut n) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        match pattern.get(p) {
            Some('*') => {
                star = Some((p, n));
                p += 1;
            }
            Some(&c) if c == '?' || c == name[n] => {
                p += 1;
                n += 1;
            }
            _ => match star {
                Some((star_p, star_n)) => {
                    p = star_p + 1;
                    n = star_n + 1;
                    star = Some((star_p, star_n + 1));
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_names_stars_and_question_marks() {
        for (pattern, name) in [
            ("emails", "emails"),
            ("*", "anything"),
            ("*", ""),
            ("reports-*", "reports-"),
            ("reports-*", "reports-daily"),
            ("*-eu", "mail-eu"),
            ("a*b*c", "aXXbYYc"),
            ("q?", "q1"),
        ] {
            assert!(glob_matches(pattern, name), "{pattern} should match {name}");
        }
        for (pattern, name) in [
            ("emails", "email"),
            ("emails", "emails2"),
            ("reports-*", "report"),
            ("*-eu", "mail-us"),
            ("a*b*c", "aXXbYY"),
            ("q?", "q"),
            ("q?", "q12"),
        ] {
            assert!(
                !glob_matches(pattern, name),
                "{pattern} should not match {name}"
            );
        }
    }

    #[test]
    fn a_grant_touches_only_its_queues() {
        let grant = Grant {
            name: "web".into(),
            role: AccessRole::Operator,
            queues: vec!["emails".into(), "reports-*".into()],
        };
        assert!(grant.allows("emails", Need::Read));
        assert!(grant.allows("reports-eu", Need::Control(Transition::Drain)));
        assert!(!grant.allows("billing", Need::Read));
    }

    #[test]
    fn each_role_allows_what_docs_http_md_says() {
        use AccessRole::*;
        let table = [
            (Reader, [true, false, false, false, false]),
            (Producer, [true, true, false, false, false]),
            (Worker, [true, false, true, false, true]),
            (Operator, [true, true, true, true, true]),
        ];
        for (role, expected) in table {
            let got = [
                role.allows(Need::Read),
                role.allows(Need::Produce),
                role.allows(Need::Work),
                role.allows(Need::Control(Transition::Drain)),
                role.allows(Need::Control(Transition::Extend)),
            ];
            assert_eq!(got, expected, "{}", role.name());
        }
    }

    #[test]
    fn role_names_round_trip_and_unknown_words_are_none() {
        for role in AccessRole::ALL {
            assert_eq!(AccessRole::from_name(role.name()), Some(role));
        }
        assert_eq!(AccessRole::from_name("admin"), None);
    }
}
