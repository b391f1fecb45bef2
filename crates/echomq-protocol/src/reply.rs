//! Error replies of `docs/protocol.md`, parsed in one place.
//!
//! A refused transition answers an error reply whose first word is the code:
//! `NOTACTIVE`, `NOJOB`, `BADSTATE <state>`, `NOTPAUSED`, `SYNTAX`,
//! `BADARG <what>`. [`Refusal::parse`] turns a code and its detail into a
//! [`Refusal`]; [`Refused`] adds the job and the transition so a message can
//! say what was refused and why.

use crate::name::JobId;
use crate::state::JobState;
use crate::transition::Transition;
use std::fmt;

/// Why the server refused a transition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// `NOTACTIVE`: a fenced verb on a job that is not active, or whose
    /// claim count no longer equals the caller's token (the lease was lost).
    NotActive,
    /// `NOJOB`: no such job.
    NoJob,
    /// `BADSTATE <state>`: the job is in a state the transition does not accept.
    BadState(JobState),
    /// `NOTPAUSED`: obliterate of a queue that is not paused.
    NotPaused,
    /// `SYNTAX`: an unknown or misplaced option.
    Syntax(String),
    /// `BADARG <what>`: a bad argument value.
    BadArg(String),
    /// `TIMELIMIT`: an `EXTEND` of a job whose time limit has passed (its
    /// run must stop).
    TimeLimit,
    /// `CONFLICT <flow>`: a `FLOW.ADD` of an id held by a job of another
    /// flow (its flow id), or of none (`-`).
    Conflict(String),
}

impl Refusal {
    /// Parses an error reply's code (first word) and detail (the rest).
    /// Returns `None` for codes that are not protocol refusals (`ERR`,
    /// `WRONGTYPE`, …).
    ///
    /// ```
    /// use echomq_protocol::{JobState, Refusal};
    /// assert_eq!(Refusal::parse("BADSTATE", Some("completed")),
    ///            Some(Refusal::BadState(JobState::Completed)));
    /// assert_eq!(Refusal::parse("NOTACTIVE", None), Some(Refusal::NotActive));
    /// assert_eq!(Refusal::parse("ERR", Some("oops")), None);
    /// ```
    pub fn parse(code: &str, detail: Option<&str>) -> Option<Refusal> {
        let detail = detail.map(str::trim).unwrap_or("");
        match code {
            "NOTACTIVE" => Some(Refusal::NotActive),
            "NOJOB" => Some(Refusal::NoJob),
            "NOTPAUSED" => Some(Refusal::NotPaused),
            "TIMELIMIT" => Some(Refusal::TimeLimit),
            "BADSTATE" => detail.parse().ok().map(Refusal::BadState),
            "SYNTAX" => Some(Refusal::Syntax(detail.to_string())),
            "BADARG" => Some(Refusal::BadArg(detail.to_string())),
            "CONFLICT" => Some(Refusal::Conflict(detail.to_string())),
            _ => None,
        }
    }

    /// Parses a whole error line, `CODE detail…`.
    pub fn parse_line(line: &str) -> Option<Refusal> {
        let line = line.trim();
        let (code, detail) = match line.split_once(' ') {
            Some((code, detail)) => (code, Some(detail)),
            None => (line, None),
        };
        Refusal::parse(code, detail)
    }

    /// The whole error line as the server writes it, `CODE detail` (what
    /// [`Refusal::parse_line`] reads back).
    ///
    /// ```
    /// # use echomq_protocol::{JobState, Refusal};
    /// let line = Refusal::BadState(JobState::Completed).line();
    /// assert_eq!(line, "BADSTATE completed");
    /// assert_eq!(Refusal::parse_line(&line), Some(Refusal::BadState(JobState::Completed)));
    /// ```
    pub fn line(&self) -> String {
        let detail = match self {
            Refusal::BadState(state) => state.as_str(),
            Refusal::Syntax(detail) | Refusal::BadArg(detail) | Refusal::Conflict(detail) => detail,
            Refusal::NotActive | Refusal::NoJob | Refusal::NotPaused | Refusal::TimeLimit => "",
        };
        if detail.is_empty() {
            self.code().to_string()
        } else {
            format!("{} {detail}", self.code())
        }
    }

    /// The reply code, as the server writes it.
    pub fn code(&self) -> &'static str {
        match self {
            Refusal::NotActive => "NOTACTIVE",
            Refusal::NoJob => "NOJOB",
            Refusal::BadState(_) => "BADSTATE",
            Refusal::NotPaused => "NOTPAUSED",
            Refusal::TimeLimit => "TIMELIMIT",
            Refusal::Syntax(_) => "SYNTAX",
            Refusal::BadArg(_) => "BADARG",
            Refusal::Conflict(_) => "CONFLICT",
        }
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::NotActive => {
                f.write_str("the job is not active under this token (NOTACTIVE): its lease was lost or it was never claimed")
            }
            Refusal::NoJob => f.write_str("no such job (NOJOB)"),
            Refusal::BadState(state) => write!(f, "the job is {state} (BADSTATE)"),
            Refusal::NotPaused => f.write_str("the queue is not paused (NOTPAUSED)"),
            Refusal::TimeLimit => f.write_str("the job's time limit has passed (TIMELIMIT)"),
            Refusal::Syntax(detail) if detail.is_empty() => f.write_str("syntax error (SYNTAX)"),
            Refusal::Syntax(detail) => write!(f, "syntax error (SYNTAX): {detail}"),
            Refusal::BadArg(what) => write!(f, "bad argument {what} (BADARG)"),
            Refusal::Conflict(flow) if flow == "-" => {
                f.write_str("the id is held by a job of no flow (CONFLICT)")
            }
            Refusal::Conflict(flow) => write!(f, "the id is held by flow {flow} (CONFLICT)"),
        }
    }
}

/// A refused transition: which job, which verb, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    /// The job concerned, when the verb names one.
    pub job: Option<JobId>,
    /// The verb that was refused.
    pub transition: Transition,
    /// Why.
    pub reason: Refusal,
}

impl Refused {
    /// The state the server found, for a `BADSTATE` refusal.
    pub fn found(&self) -> Option<JobState> {
        match self.reason {
            Refusal::BadState(state) => Some(state),
            _ => None,
        }
    }
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.job {
            Some(job) => write!(
                f,
                "{} of job {job} refused: {}",
                self.transition, self.reason
            ),
            None => write!(f, "{} refused: {}", self.transition, self.reason),
        }
    }
}

impl std::error::Error for Refused {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notactive_parses() {
        assert_eq!(Refusal::parse_line("NOTACTIVE"), Some(Refusal::NotActive));
    }

    #[test]
    fn nojob_parses() {
        assert_eq!(Refusal::parse_line("NOJOB"), Some(Refusal::NoJob));
    }

    #[test]
    fn badstate_parses_every_state() {
        for state in JobState::ALL {
            let line = format!("BADSTATE {state}");
            assert_eq!(Refusal::parse_line(&line), Some(Refusal::BadState(state)));
        }
        assert_eq!(Refusal::parse_line("BADSTATE nonsense"), None);
    }

    #[test]
    fn notpaused_parses() {
        assert_eq!(Refusal::parse_line("NOTPAUSED"), Some(Refusal::NotPaused));
    }

    #[test]
    fn timelimit_parses() {
        assert_eq!(Refusal::parse_line("TIMELIMIT"), Some(Refusal::TimeLimit));
        assert_eq!(Refusal::TimeLimit.line(), "TIMELIMIT");
    }

    #[test]
    fn syntax_parses() {
        assert_eq!(
            Refusal::parse_line("SYNTAX unknown option FOO"),
            Some(Refusal::Syntax("unknown option FOO".into()))
        );
    }

    #[test]
    fn badarg_parses() {
        assert_eq!(
            Refusal::parse_line("BADARG priority"),
            Some(Refusal::BadArg("priority".into()))
        );
    }

    #[test]
    fn other_codes_are_not_refusals() {
        assert_eq!(
            Refusal::parse_line("WRONGTYPE Operation against a key"),
            None
        );
        assert_eq!(Refusal::parse_line("ERR unknown command"), None);
    }

    #[test]
    fn a_refusal_names_job_transition_and_state() {
        let refused = Refused {
            job: Some(JobId::new("42").unwrap()),
            transition: Transition::Complete,
            reason: Refusal::BadState(JobState::Cancelled),
        };
        assert_eq!(
            refused.to_string(),
            "complete of job 42 refused: the job is cancelled (BADSTATE)"
        );
        assert_eq!(refused.found(), Some(JobState::Cancelled));
    }
}
