use super::*;
use std::collections::HashSet;

#[test]
fn every_command_is_named_after_its_verb() {
    for t in Transition::ALL {
        let control = t.control();
        let script = control.verb.to_ascii_lowercase().replace('.', "_");
        assert_eq!(control.command.native, format!("EMQ.{}", control.verb));
        assert_eq!(control.command.script, script);
        if let Some(bulk) = &control.bulk {
            assert_eq!(bulk.native, format!("EMQ.{}.BULK", control.verb));
            assert_eq!(bulk.script, format!("{script}_bulk"));
        }
    }
}

#[test]
fn names_verbs_and_commands_are_unique() {
    let mut seen = HashSet::new();
    for t in Transition::ALL {
        assert!(seen.insert(t.verb()), "verb {} twice", t.verb());
        for (_, command) in t.control().commands() {
            assert!(seen.insert(command.native), "{} twice", command.native);
            assert!(seen.insert(command.script), "{} twice", command.script);
        }
    }
}

#[test]
fn every_control_touches_its_base_first_and_each_key_once() {
    for t in Transition::ALL {
        let keys = t.control().keys;
        assert_eq!(keys.first(), Some(&QueueKey::Base), "{t}");
        let unique: HashSet<_> = keys.iter().collect();
        assert_eq!(unique.len(), keys.len(), "{t} lists a key twice");
    }
}

#[test]
fn exclusive_words_are_options_and_option_words_are_upper_case() {
    for t in Transition::ALL {
        for (_, command) in t.control().commands() {
            for word in command.exclusive.iter().copied().flatten() {
                assert!(command.options.iter().any(|o| o.word == *word), "{word}");
            }
            for opt in command.options {
                assert_eq!(opt.word, opt.word.to_ascii_uppercase());
            }
        }
    }
}

#[test]
fn a_bulk_form_takes_no_options() {
    for t in Transition::ALL {
        if let Some(bulk) = &t.control().bulk {
            assert!(bulk.options.is_empty(), "{t}");
            assert!(!bulk.args.is_empty(), "{t}");
        }
    }
}

#[test]
fn every_scope_has_controls_and_every_control_a_function() {
    for scope in Scope::ALL {
        assert!(
            Transition::ALL.iter().any(|t| t.control().scope == scope),
            "{scope:?}"
        );
    }
    for t in Transition::ALL {
        let control = t.control();
        assert!(!control.functions.is_empty(), "{t}");
        for function in control.functions {
            assert!(
                function.contains("::"),
                "{t}: {function} is not Type::method"
            );
        }
        assert!(
            !control.effect.is_empty() && !control.effect.contains('\n'),
            "{t}"
        );
    }
}

#[test]
fn synopses_read_as_the_protocol_writes_them() {
    let claim = Transition::Claim.command(Form::Single).unwrap();
    assert_eq!(
        claim.synopsis(Form::Single),
        "EMQ.CLAIM base worker lease_ms [COUNT n]"
    );
    let bulk = Transition::Complete.command(Form::Bulk).unwrap();
    assert_eq!(
        bulk.synopsis(Form::Bulk),
        "EMQ.COMPLETE.BULK base id token result [id token result …] [CLAIM worker lease_ms count]"
    );
    let enqueue_bulk = Transition::Enqueue.command(Form::Bulk).unwrap();
    assert_eq!(
        enqueue_bulk.synopsis(Form::Bulk),
        "EMQ.ENQUEUE.BULK base id payload priority attempts [id payload priority attempts …] [WAITED]"
    );
    let counts = Transition::Counts.command(Form::Single).unwrap();
    assert_eq!(counts.synopsis(Form::Single), "EMQ.COUNTS base");
}

#[test]
fn an_option_that_needs_another_shows_inside_its_brackets() {
    let enqueue = Transition::Enqueue.command(Form::Single).unwrap();
    assert_eq!(
        enqueue.synopsis(Form::Single),
        "EMQ.ENQUEUE base id payload [PRIORITY p] [ATTEMPTS n] [DEDUP key [DEDUP_FOR ms | DEBOUNCE ms]] [GROUP g] [TRACE tp] [TIME_LIMIT ms] [LIFO] [WAITED] [START_BY ms | START_WITHIN ms]"
    );
    let schedule = Transition::Schedule.command(Form::Single).unwrap();
    assert_eq!(
        schedule.synopsis(Form::Single),
        "EMQ.SCHEDULE base id payload run_at [PRIORITY p] [ATTEMPTS n] [REPEAT key] [DEDUP key [DEDUP_FOR ms]] [GROUP g] [TRACE tp] [TIME_LIMIT ms] [LIFO] [WAITED] [START_BY ms | START_WITHIN ms]"
    );
    assert_eq!(enqueue.needs("DEBOUNCE"), Some("DEDUP"));
    assert_eq!(enqueue.needs("DEDUP"), None);
}

#[test]
fn a_trace_option_is_refused_badarg_traceparent() {
    for t in [Transition::Enqueue, Transition::Schedule] {
        let command = t.command(Form::Single).unwrap();
        let trace = command.options.iter().find(|o| o.word == "TRACE").unwrap();
        assert_eq!(trace.badarg(), "traceparent");
        assert!(
            command
                .refusals(Form::Single)
                .iter()
                .any(|(code, _)| code == "BADARG traceparent")
        );
        // The bulk forms have fixed-width arguments and take no trace.
        let bulk = t.command(Form::Bulk).unwrap();
        assert!(bulk.options.is_empty());
    }
}

#[test]
fn what_an_option_needs_is_an_option_and_an_exclusive_group_needs_one_thing() {
    for t in Transition::ALL {
        for (_, command) in t.control().commands() {
            for (option, needed) in command.requires {
                for word in [option, needed] {
                    assert!(
                        command.options.iter().any(|o| o.word == *word),
                        "{t}: {word}"
                    );
                }
                assert_eq!(
                    command.needs(needed),
                    None,
                    "{t}: {needed} needs another in turn"
                );
            }
            for group in command.exclusive {
                let needs: HashSet<Option<&str>> =
                    group.iter().map(|word| command.needs(word)).collect();
                assert!(
                    needs.len() <= 1,
                    "{t}: the exclusive options {group:?} need different options"
                );
            }
        }
    }
}

/// The codes (with `BADARG`'s name) of a command's refusals, in order.
fn refusal_codes(transition: Transition, form: Form) -> Vec<String> {
    let command = transition.command(form).unwrap();
    command
        .refusals(form)
        .into_iter()
        .map(|(code, _)| code)
        .collect()
}

#[test]
fn refusals_name_each_bad_argument() {
    assert_eq!(
        refusal_codes(Transition::Claim, Form::Single),
        [
            "BADARG queue",
            "BADARG worker",
            "BADARG lease_ms",
            "BADARG count",
            "SYNTAX",
            "WRONGTYPE"
        ]
    );
    assert_eq!(
        refusal_codes(Transition::Complete, Form::Bulk),
        [
            "BADARG queue",
            "BADARG jobs",
            "BADARG id",
            "BADARG token",
            "BADARG lease_ms",
            "BADARG count",
            "WRONGTYPE"
        ]
    );
}

#[test]
fn only_bulk_forms_close_with_a_tail_that_no_group_count_can_mistake() {
    let mut tails = Vec::new();
    for t in Transition::ALL {
        for (form, command) in t.control().commands() {
            let Some(tail) = &command.tail else { continue };
            assert_eq!(form, Form::Bulk);
            tails.push((*t, tail.word));
            assert!(
                !tail.width().is_multiple_of(command.args.len()),
                "{t}: a tail as wide as whole groups"
            );
        }
    }
    assert_eq!(
        tails,
        [
            (Transition::Enqueue, "WAITED"),
            (Transition::Complete, "CLAIM"),
            (Transition::Schedule, "WAITED"),
        ]
    );
}

#[test]
fn a_control_is_found_by_name_verb_or_command() {
    for name in [
        "stalled_check",
        "STALLED.CHECK",
        "emq.stalled.check",
        "stalled-check",
        "stalled.check",
    ] {
        assert_eq!(
            Transition::named(name),
            Some(Transition::StalledCheck),
            "{name}"
        );
    }
    assert_eq!(Transition::named("claim"), Some(Transition::Claim));
    assert_eq!(Transition::named("clam"), None);
    let (t, form, command) = Transition::by_native("emq.enqueue.bulk").unwrap();
    assert_eq!(
        (t, form, command.script),
        (Transition::Enqueue, Form::Bulk, "enqueue_bulk")
    );
    assert!(Transition::by_native("EMQ.VERSION").is_none());
}

#[test]
fn display_is_the_lower_case_verb() {
    assert_eq!(Transition::StalledCheck.to_string(), "stalled.check");
    assert_eq!(Transition::Complete.to_string(), "complete");
}

#[test]
fn an_option_that_needs_another_is_shown_with_it_and_named_when_missing() {
    let limit = Transition::Limit.command(Form::Single).unwrap();
    assert_eq!(
        limit.synopsis(Form::Single),
        "EMQ.LIMIT base [MAX n PER ms | OFF]"
    );
    let refusals = limit.refusals(Form::Single);
    let when = |code: &str| {
        refusals
            .iter()
            .find(|(c, _)| c == code)
            .map(|(_, when)| when.clone())
            .unwrap()
    };
    assert!(
        when("BADARG per").ends_with("or missing with MAX"),
        "{refusals:?}"
    );
    assert!(
        when("BADARG max").ends_with("or missing with PER"),
        "{refusals:?}"
    );
    let concurrency = Transition::Concurrency.command(Form::Single).unwrap();
    assert_eq!(
        concurrency.synopsis(Form::Single),
        "EMQ.CONCURRENCY base [MAX n | OFF]"
    );
    let fail = Transition::Fail.command(Form::Single).unwrap();
    assert_eq!(
        fail.synopsis(Form::Single),
        "EMQ.FAIL base id token error [RETRY_IN ms | DEAD | CANCELLED | RATE_LIMITED ms]"
    );
}

#[test]
fn a_needed_option_is_an_option_of_the_command() {
    for t in Transition::ALL {
        for (_, command) in t.control().commands() {
            for (word, needs) in command.requires {
                for w in [word, needs] {
                    assert!(command.options.iter().any(|o| o.word == *w), "{t}: {w}");
                }
            }
        }
    }
}
