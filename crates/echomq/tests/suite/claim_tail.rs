//! `COMPLETE.BULK … CLAIM worker lease_ms count`: completions and the next
//! claim in one call, on a server, a 3-master cluster and wire 6. The call
//! completes exactly as without the tail, then claims exactly as CLAIM
//! would; a refusal of the claim's part leaves the completions written.

#[path = "claim_tail/cases.rs"]
mod cases;
use crate::common;

suite!(
    claim_tail_suite_on_cluster, claim_tail_suite_on_wire_6:
    a_claim_tail_completes_then_claims_the_next_batch,
    a_claim_tail_claims_the_room_its_completions_free,
    a_claim_tail_answers_a_withheld_claim_as_claim_does,
    a_claim_tail_on_a_paused_queue_completes_and_claims_nothing,
    a_refused_claim_tail_leaves_the_completions_written,
    a_claim_tail_checks_each_key_type_once,
);
