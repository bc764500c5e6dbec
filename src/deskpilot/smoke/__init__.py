"""The live smoke suite and its telemetry gates (``deskpilot smoke`` / ``deskpilot smoke summary``).

A smoke run proves ``deskpilot agent`` works against a real OpenAI-compatible endpoint: a
provider health preflight, then cases that each run the agent as its own process (so a protocol
failure and a process-lifecycle failure can be told apart), each leaving its artifacts in a
stamped run under ``<data dir>/smoke/``; a versioned summary per run; and a reader of those
summaries for history, comparison, drift, trend gates and retention (docs/smoke.md).

Module map (one-way, checked by the ``smoke-internal`` import contract):

* ``schema`` — schema names, the stamp, artifact file names: the one source of truth for both
  halves (the runner writes what the summary side reads);
* the runner: ``cases`` / ``desktop_cases`` (what runs and what must be observed), ``checks``
  (judging one case from its events and debug log), ``preflight``, ``lifecycle`` (one agent
  process under a watchdog), ``summary`` (the run's summary), ``runner``, ``coverage``;
* the reader: ``history`` (listing and loading summaries), ``compare``, ``drift``, ``gates``,
  ``retention``;
* ``fake_model`` — a scripted OpenAI-compatible server for the self-tests, ``selftest``.
"""
