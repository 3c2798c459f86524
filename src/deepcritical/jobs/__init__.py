"""Research runs as durable jobs on DBOS (see ``docs/jobs.md``): :func:`submit_run` records a
``queued`` run and enqueues it, workers (:func:`run_worker`, ``deepcritical worker``) execute
it with :func:`deepcritical.api.resume`, :func:`follow_run` streams its event log from any
offset, :func:`cancel_run` stops it. A job stopped for the researcher's review waits in a
workflow of its own; :func:`wake_review` wakes it once the decision is stored.

``deepcritical research`` and :func:`deepcritical.api.research` do not use this package: a
run there stays in-process.
"""

from deepcritical.jobs.follow import follow_run
from deepcritical.jobs.review_wait import wake_review
from deepcritical.jobs.submit import cancel_run, submit_run
from deepcritical.jobs.worker import run_worker

__all__ = ["cancel_run", "follow_run", "run_worker", "submit_run", "wake_review"]
