"""Long jobs outside the page runs (transformer/serving/jobs.py): first come first served with each job's place,
progress as it is made, a cap per session, cancelling, failures reported, and a toy training that arrives intact."""

from __future__ import annotations

import numpy as np
import pytest

from transformer.features.toy import ToySettings, run_to_end
from transformer.serving.jobs import (
    CANCELLED,
    FAILED,
    FINISHED,
    RUNNING,
    WAITING,
    JobError,
    JobQueue,
    decode_progress,
    encode_progress,
    settings_of,
)

pytestmark = pytest.mark.training


@pytest.fixture
def queue():
    jobs = JobQueue(workers=1, per_owner=1, capacity=3)
    yield jobs
    jobs.close()


def test_progress_round_trips_with_its_arrays():
    arrays = {"cross": np.arange(24, dtype=np.float32).reshape(2, 3, 4), "empty": np.zeros((0, 2), np.float32)}
    record, back = decode_progress(encode_progress({"step": 7, "label": "step 7 · 1.0 s"}, arrays))
    assert record == {"step": 7, "label": "step 7 · 1.0 s"}
    assert set(back) == set(arrays) and all(np.array_equal(back[name], arrays[name]) for name in arrays)


def test_jobs_run_in_order_with_their_place_and_progress(queue):
    first = queue.submit("ann", "sleep", {"steps": 3, "seconds": 0.3})
    second = queue.submit("bob", "sleep", {"steps": 2, "seconds": 0.05})
    assert queue.place(second) in (1, 2) and second.state == WAITING
    assert queue.wait(first, timeout=60) and first.state == FINISHED and first.progress == [1, 2, 3]
    assert queue.wait(second, timeout=60) and second.state == FINISHED and second.progress == [1, 2]
    assert second.started >= first.ended  # one worker: the second waited for the first
    assert queue.place(second) == 0 and queue.waiting == 0


def test_a_session_has_one_job_at_a_time_and_the_queue_a_capacity(queue):
    running = queue.submit("ann", "sleep", {"steps": 50, "seconds": 0.1})
    while running.state == WAITING:  # the worker takes it: the queue's three places are free again
        queue.wait(running, timeout=0.01)
    with pytest.raises(JobError, match="already has 1 job"):
        queue.submit("ann", "sleep", {})
    for owner in ("b", "c", "d"):
        queue.submit(owner, "sleep", {"steps": 1})
    with pytest.raises(JobError, match="queue is full"):
        queue.submit("e", "sleep", {})
    with pytest.raises(JobError, match="unknown kind"):
        queue.submit("f", "format the disk", {})


def test_a_cancelled_job_keeps_its_progress_and_the_next_one_runs(queue):
    long = queue.submit("ann", "sleep", {"steps": 100, "seconds": 0.1})
    waiting = queue.submit("bob", "sleep", {"steps": 2, "seconds": 0.01})
    while not long.progress:
        queue.wait(long, timeout=0.05)
    assert long.state == RUNNING
    queue.cancel(long)
    assert long.state == CANCELLED and long.progress and len(long.progress) < 100
    assert queue.wait(waiting, timeout=60) and waiting.state == FINISHED  # on a fresh worker process
    again = queue.submit("ann", "sleep", {"steps": 1})  # the cancelled job no longer counts against its owner
    assert queue.wait(again, timeout=60) and again.state == FINISHED


def test_a_failing_job_says_why_and_the_worker_goes_on(queue):
    broken = queue.submit("ann", "sleep", {"steps": 3, "fail_at": 1, "seconds": 0.01})
    assert queue.wait(broken, timeout=60) and broken.state == FAILED
    assert "failed at step 1 as asked" in broken.error and broken.progress == [1]
    after = queue.submit("ann", "sleep", {"steps": 1})
    assert queue.wait(after, timeout=60) and after.state == FINISHED


def test_a_toy_training_in_the_queue_is_the_one_run_here(queue):
    settings = ToySettings(
        task="copy", max_steps=60, max_seconds=None, stop_at_accuracy=None, snapshot_every=30, held_out_size=20
    )
    job = queue.submit("ann", "toy", settings_of(settings))
    assert queue.wait(job, timeout=300) and job.state == FINISHED, job.error
    here = run_to_end(settings, threads=1)
    assert [snapshot.step for snapshot in job.progress] == [snapshot.step for snapshot in here.snapshots]
    last, expected = job.progress[-1], here.snapshots[-1]
    assert last.metrics["exact_match"] == pytest.approx(expected.metrics["exact_match"])
    assert set(last.attention) == {"cross", "encoder"}
    np.testing.assert_allclose(last.attention["cross"], expected.attention["cross"], atol=1e-4)


def test_a_job_cancelled_as_it_starts_leaves_the_next_job_its_own_progress():
    """A cancel that lands while the worker is still starting the job's child (or just after) must not leave that
    child to the next job: it would read the cancelled job's frames, another session's training as its own."""
    for trial in range(6):
        queue = JobQueue(workers=1, per_owner=1, capacity=3)  # a fresh worker: its child starts with the job
        try:
            cancelled = queue.submit("ann", "sleep", {"steps": 6, "seconds": 0.2})
            behind = queue.submit("bob", "sleep", {"steps": 2, "seconds": 0.01})
            while cancelled.state == WAITING:
                pass  # cancel the moment the worker takes it
            queue.cancel(cancelled)
            assert queue.wait(behind, timeout=60)
            assert behind.state == FINISHED and behind.progress == [1, 2], (trial, behind.progress)
        finally:
            queue.close()


def test_a_job_id_cannot_be_guessed_from_another(queue):
    ids = [queue.submit(f"owner-{index}", "sleep", {"steps": 1, "seconds": 0}).id for index in range(3)]
    assert len(set(ids)) == 3 and all(len(job_id) >= 20 and job_id.isascii() for job_id in ids)
    assert len({job_id[:4] for job_id in ids}) == 3  # no shared prefix and counter to count from
