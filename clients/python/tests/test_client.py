"""The client's calls against a real `emq serve` on a real Valkey."""

from __future__ import annotations

import threading
import time
import unittest
from typing import Any, cast

from echomq import Client, EchoMQError, Event, NewJob, Timeout
from echomq.client import _sse, duration

from .support import client, guarded, job_state, queue_name, wait_until


class Producing(unittest.TestCase):
    def setUp(self) -> None:
        self.client = client()
        self.addCleanup(self.client.close)
        self.queue = queue_name(self._testMethodName[5:20])

    def test_enqueue_creates_a_job_that_reads_back(self) -> None:
        answer = self.client.enqueue(self.queue, {"to": "ada"}, priority=3)
        self.assertEqual(answer.outcome, "created")
        job = self.client.job(self.queue, answer.id)
        self.assertEqual(job["state"], "pending")
        self.assertEqual(job["payload"], {"to": "ada"})
        self.assertEqual(job["priority"], 3)

    def test_enqueue_with_a_taken_id_answers_existed(self) -> None:
        first = self.client.enqueue(self.queue, 1, id="order-7")
        again = self.client.enqueue(self.queue, 2, id="order-7")
        self.assertEqual((first.id, first.outcome), ("order-7", "created"))
        self.assertEqual((again.id, again.outcome), ("order-7", "existed"))

    def test_enqueue_many_splits_past_a_thousand_and_keeps_order(self) -> None:
        jobs: list[NewJob] = [{"payload": n, "id": f"n{n}"} for n in range(1001)]
        answers = self.client.enqueue_many(self.queue, jobs)
        self.assertEqual([a.id for a in answers], [f"n{n}" for n in range(1001)])
        self.assertEqual({a.outcome for a in answers}, {"created"})
        self.assertEqual(self.client.queue(self.queue).counts["pending"], 1001)

    def test_an_unknown_option_is_refused_naming_it(self) -> None:
        with self.assertRaises(EchoMQError) as caught:
            self.client.enqueue(self.queue, 1, **cast(Any, {"colour": "red"}))
        self.assertEqual((caught.exception.status, caught.exception.code), (400, "BADREQUEST"))
        self.assertEqual(caught.exception.field, "colour")
        self.assertEqual(self.client.jobs(self.queue).jobs, [])

    def test_a_body_over_the_limit_is_refused_toolarge(self) -> None:
        # Large enough that the server answers before reading it all and
        # closes: the client still reads its answer.
        with self.assertRaises(EchoMQError) as caught:
            self.client.enqueue(self.queue, "x" * (32 << 20))
        self.assertEqual((caught.exception.status, caught.exception.code), (413, "TOOLARGE"))
        self.assertEqual(self.client.enqueue(self.queue, "small").outcome, "created")
        self.assertEqual(self.client.queue(self.queue).counts["pending"], 1)

    def test_a_bad_priority_is_refused(self) -> None:
        with self.assertRaises(EchoMQError) as caught:
            self.client.enqueue(self.queue, 1, priority=256)
        self.assertEqual(caught.exception.status, 400)
        self.assertEqual(self.client.jobs(self.queue).jobs, [])


class Outcomes(unittest.TestCase):
    def setUp(self) -> None:
        self.client = client()
        self.addCleanup(self.client.close)
        self.queue = queue_name(self._testMethodName[5:20])

    def claim_one(self) -> tuple[str, int]:
        claimed = self.client.claim(self.queue, count=1, lease_ms=30_000)
        self.assertEqual(len(claimed), 1)
        return claimed[0].id, claimed[0].token

    def test_outcome_times_out_as_timeout(self) -> None:
        id = self.client.enqueue(self.queue, 1).id
        started = time.monotonic()
        with self.assertRaises(Timeout) as caught:
            self.client.outcome(self.queue, id, timeout=0.3)
        self.assertEqual(caught.exception.id, id)
        self.assertGreaterEqual(time.monotonic() - started, 0.25)

    def test_a_completed_outcome_carries_the_result(self) -> None:
        id = self.client.enqueue(self.queue, {"n": 2}).id
        claimed_id, token = self.claim_one()
        self.assertEqual(claimed_id, id)
        self.client.complete(self.queue, id, token, {"doubled": 4})
        outcome = self.client.outcome(self.queue, id, timeout=5)
        self.assertEqual((outcome.id, outcome.outcome, outcome.result), (id, "completed", {"doubled": 4}))
        self.assertTrue(outcome.completed)

    def test_enqueue_and_wait_answers_the_outcome(self) -> None:
        def work() -> None:
            jobs = self.client.claim(self.queue, count=1, lease_ms=30_000, wait_ms=10_000)
            for job in jobs:
                self.client.complete(self.queue, job.id, job.token, job.payload * 10)

        worker = threading.Thread(target=work)
        worker.start()
        outcome = self.client.enqueue_and_wait(self.queue, 7, timeout=15)
        worker.join()
        self.assertEqual((outcome.outcome, outcome.result), ("completed", 70))

    def test_enqueue_and_wait_times_out_as_timeout(self) -> None:
        with self.assertRaises(Timeout) as caught:
            self.client.enqueue_and_wait(self.queue, 1, timeout=0.2)
        self.assertEqual(job_state(self.client, self.queue, caught.exception.id), "pending")

    def test_a_dead_outcome_carries_the_error_and_attempts(self) -> None:
        id = self.client.enqueue(self.queue, 1, attempts=1).id
        _, token = self.claim_one()
        self.assertEqual(self.client.fail(self.queue, id, token, "boom"), "dead")
        outcome = self.client.outcome(self.queue, id, timeout=5)
        self.assertEqual((outcome.outcome, outcome.error, outcome.attempts), ("dead", "boom", 1))

    def test_fail_with_dead_skips_the_remaining_attempts(self) -> None:
        id = self.client.enqueue(self.queue, 1, attempts=5).id
        _, token = self.claim_one()
        self.assertEqual(self.client.fail(self.queue, id, token, "no use", action="dead"), "dead")
        self.assertEqual(self.client.outcome(self.queue, id, timeout=5).outcome, "dead")

    def test_a_retried_job_is_claimed_again(self) -> None:
        id = self.client.enqueue(self.queue, 1, attempts=2).id
        _, token = self.claim_one()
        self.assertEqual(self.client.fail(self.queue, id, token, "flaky", delay_ms=0), "retry")
        again = wait_until("the retry", lambda: self.client.claim(self.queue, count=1, lease_ms=30_000))
        self.assertEqual((again[0].id, again[0].attempt), (id, 2))

    def test_cancelling_a_pending_job_is_a_cancelled_outcome(self) -> None:
        id = self.client.enqueue(self.queue, 1).id
        self.client.cancel(self.queue, id)
        self.assertEqual(self.client.outcome(self.queue, id, timeout=5).outcome, "cancelled")

    def test_removing_a_job_is_a_removed_outcome(self) -> None:
        id = self.client.enqueue(self.queue, 1, delay_ms=60_000).id
        self.client.remove(self.queue, id)
        self.assertEqual(self.client.outcome(self.queue, id, timeout=5).outcome, "removed")

    def test_cancelling_a_finished_job_is_refused_badstate(self) -> None:
        id = self.client.enqueue(self.queue, 1).id
        _, token = self.claim_one()
        self.client.complete(self.queue, id, token)
        with self.assertRaises(EchoMQError) as caught:
            self.client.cancel(self.queue, id)
        error = caught.exception
        self.assertEqual((error.status, error.code, error.job, error.state), (409, "BADSTATE", id, "completed"))
        self.assertEqual(error.line, "BADSTATE completed")
        self.assertEqual(job_state(self.client, self.queue, id), "completed")

    def test_a_missing_job_is_not_found(self) -> None:
        with self.assertRaises(EchoMQError) as caught:
            self.client.job(self.queue, "no-such-job")
        self.assertEqual(caught.exception.status, 404)
        self.assertIn(caught.exception.code, ("NOTFOUND", "NOJOB"))


class Working(unittest.TestCase):
    def setUp(self) -> None:
        self.client = client()
        self.addCleanup(self.client.close)
        self.queue = queue_name(self._testMethodName[5:20])

    def test_a_claim_waits_for_a_job(self) -> None:
        started = time.monotonic()
        self.assertEqual(self.client.claim(self.queue, wait_ms=400), [])
        self.assertGreaterEqual(time.monotonic() - started, 0.35)

        claimed: list[str] = []
        waiter = threading.Thread(
            target=lambda: claimed.extend(j.id for j in self.client.claim(self.queue, wait_ms=20_000))
        )
        waiter.start()
        id = self.client.enqueue(self.queue, 1).id
        waiter.join(timeout=15)
        self.assertEqual(claimed, [id])

    def test_a_stale_token_is_refused_notactive(self) -> None:
        id = self.client.enqueue(self.queue, 1).id
        job = self.client.claim(self.queue)[0]
        with self.assertRaises(EchoMQError) as caught:
            self.client.complete(self.queue, id, job.token + 1, "late")
        self.assertEqual((caught.exception.status, caught.exception.code), (409, "NOTACTIVE"))
        self.assertEqual(job_state(self.client, self.queue, id), "active")

    def test_extend_answers_whether_a_cancel_was_requested(self) -> None:
        id = self.client.enqueue(self.queue, 1).id
        job = self.client.claim(self.queue, lease_ms=5_000)[0]
        self.assertFalse(self.client.extend(self.queue, id, job.token, 5_000))
        self.client.cancel(self.queue, id)
        self.assertTrue(self.client.extend(self.queue, id, job.token, 5_000))
        self.assertEqual(self.client.fail(self.queue, id, job.token, "stopped", action="cancelled"), "cancelled")
        self.assertEqual(self.client.outcome(self.queue, id, timeout=5).outcome, "cancelled")

    def test_progress_and_log_lines_read_back(self) -> None:
        id = self.client.enqueue(self.queue, 1).id
        job = self.client.claim(self.queue)[0]
        self.client.progress(self.queue, id, job.token, {"done": 50})
        self.client.append_log(self.queue, id, job.token, "half way")
        self.client.append_log(self.queue, id, job.token, "nearly")
        self.assertEqual(self.client.log(self.queue, id), ["half way", "nearly"])
        self.assertIn(self.client.job(self.queue, id)["progress"], ({"done": 50}, '{"done":50}'))

    def test_rate_limited_sends_the_job_back_to_pending(self) -> None:
        id = self.client.enqueue(self.queue, 1, attempts=1).id
        job = self.client.claim(self.queue)[0]
        answer = self.client.fail(self.queue, id, job.token, "429", action="rate_limited", delay_ms=60_000)
        self.assertEqual(answer, "rate_limited")
        self.assertEqual(job_state(self.client, self.queue, id), "pending")
        self.assertEqual(self.client.claim(self.queue, wait_ms=200), [])


class Events(unittest.TestCase):
    def setUp(self) -> None:
        self.client = client()
        self.addCleanup(self.client.close)
        self.queue = queue_name("events")

    def test_events_stream_a_jobs_life_and_resume_after_an_id(self) -> None:
        seen: list[Event] = []

        def read() -> None:
            for event in self.client.events(self.queue, idle=30):
                seen.append(event)
                if event.name == "completed" and event.data.get("job") == "watched":
                    return

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        # The stream reads from now: enqueue until the reader sees an event.
        wait_until("the stream to open", lambda: self.client.enqueue(self.queue, "marker") and list(seen))
        self.client.enqueue(self.queue, "watched", id="watched")
        watched = next(job for job in self.client.claim(self.queue, count=1000) if job.id == "watched")
        self.client.complete(self.queue, "watched", watched.token, "done")
        reader.join(timeout=20)
        self.assertFalse(reader.is_alive(), "the completed event never came")

        life = [event for event in seen if event.data.get("job") == "watched"]
        self.assertEqual((life[0].name, life[-1].name), ("enqueued", "completed"))
        at = seen.index(life[0])
        stream = self.client.events(self.queue, last_event_id=seen[at].id, idle=30)
        self.assertEqual(next(stream).id, seen[at + 1].id)
        stream.close()


class Operating(unittest.TestCase):
    def setUp(self) -> None:
        self.client = client()
        self.addCleanup(self.client.close)
        self.queue = queue_name(self._testMethodName[5:20])

    def test_queues_list_counts_and_pause_resume_flip_paused(self) -> None:
        self.client.enqueue_many(self.queue, [{"payload": n} for n in range(3)])
        listed = {q.name: q for q in self.client.queues()}
        self.assertEqual(listed[self.queue].counts["pending"], 3)
        self.assertFalse(listed[self.queue].paused)
        self.client.pause(self.queue)
        self.assertTrue(self.client.queue(self.queue).paused)
        self.assertEqual(self.client.claim(self.queue), [])
        self.client.resume(self.queue)
        self.assertFalse(self.client.queue(self.queue).paused)
        self.assertEqual(len(self.client.claim(self.queue)), 1)

    def test_jobs_page_with_a_cursor(self) -> None:
        ids = [a.id for a in self.client.enqueue_many(self.queue, [{"payload": n} for n in range(7)])]
        first = self.client.jobs(self.queue, state="pending", limit=3)
        self.assertEqual(len(first.jobs), 3)
        self.assertIsNotNone(first.next)
        seen = [job["id"] for job in self.client.iter_jobs(self.queue, "pending", limit=3)]
        self.assertEqual(sorted(seen), sorted(ids))

    def test_drain_deletes_the_pending_jobs(self) -> None:
        self.client.enqueue_many(self.queue, [{"payload": n} for n in range(4)])
        scheduled = self.client.enqueue(self.queue, 9, delay_ms=60_000).id
        self.client.drain(self.queue)
        self.assertEqual(self.client.queue(self.queue).counts["pending"], 0)
        self.assertEqual(job_state(self.client, self.queue, scheduled), "scheduled")
        self.client.drain(self.queue, scheduled=True)
        self.assertEqual(self.client.outcome(self.queue, scheduled, timeout=5).outcome, "removed")

    def test_an_unknown_control_is_not_found(self) -> None:
        with self.assertRaises(EchoMQError) as caught:
            self.client.control(self.queue, "no-such-verb")
        self.assertEqual(caught.exception.status, 404)


class Tokens(unittest.TestCase):
    def test_a_token_is_sent_as_a_bearer_token(self) -> None:
        url, token = guarded()
        with_token = Client(url, token=token)
        self.addCleanup(with_token.close)
        queue = queue_name("token")
        self.assertEqual(with_token.enqueue(queue, 1).outcome, "created")
        self.assertIn(queue, [q.name for q in with_token.queues()])

    def test_no_token_or_a_wrong_one_is_unauthorized(self) -> None:
        url, token = guarded()
        for sent in (None, token + "0"):
            other = Client(url, token=sent)
            self.addCleanup(other.close)
            with self.assertRaises(EchoMQError) as caught:
                other.queues()
            self.assertEqual((caught.exception.status, caught.exception.code), (401, "UNAUTHORIZED"), sent)


    def test_a_producer_token_enqueues_to_its_queues_and_claims_nothing(self) -> None:
        url, token = guarded("producer")
        producer = Client(url, token=token)
        self.addCleanup(producer.close)
        mine, other = queue_name("scoped"), queue_name("unscoped")
        self.assertEqual(producer.enqueue(mine, 1).outcome, "created")
        for refused in (lambda: producer.claim(mine), lambda: producer.enqueue(other, 1)):
            with self.assertRaises(EchoMQError) as caught:
                refused()
            self.assertEqual((caught.exception.status, caught.exception.code), (403, "FORBIDDEN"))
        self.assertEqual(client().queue(mine).counts["pending"], 1)


class Addressing(unittest.TestCase):
    def test_the_api_prefix_is_added_once(self) -> None:
        for base in ("http://h:1", "http://h:1/", "http://h:1/api/v1", "http://h:1/api/v1/"):
            self.assertEqual(Client(base)._http._prefix, "/api/v1", base)
        self.assertEqual(Client("http://h:1/emq/")._http._prefix, "/emq/api/v1")

    def test_durations_are_whole_milliseconds(self) -> None:
        self.assertEqual(duration(1.5), "1500ms")
        self.assertEqual(duration(0), "0ms")
        with self.assertRaises(ValueError):
            duration(-1)

    def test_server_sent_events_parse_with_comments_and_split_data(self) -> None:
        lines = [": keep-alive", "id: 5-0/1", "event: retried", 'data: {"job": "7",', 'data: "n": 1}', "", ""]
        self.assertEqual(list(_sse(iter(lines))), [Event(id="5-0/1", name="retried", data={"job": "7", "n": 1})])

    def test_an_unreachable_server_raises_unreachable(self) -> None:
        with self.assertRaises(EchoMQError) as caught:
            Client("http://127.0.0.1:9", timeout=2).queues()
        self.assertEqual((caught.exception.code, caught.exception.status), ("UNREACHABLE", 0))

    def test_a_base_url_that_is_not_http_is_refused(self) -> None:
        with self.assertRaises(ValueError):
            Client("redis://127.0.0.1:6379")


if __name__ == "__main__":
    unittest.main()
