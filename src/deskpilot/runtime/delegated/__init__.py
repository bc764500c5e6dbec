"""Delegated tasks: ``start_task`` hands a whole goal to deskpilot's own operator.

The operator is a loop over the task's bound window: observe, ask the configured decision
model for the next decision (through the provider's local JSON action protocol), act through
the same tool path an agent's atomic calls take (so freshness, policy, ledger, confirmations
and the desktop lane all apply), count what changed nothing, repeat — until the success
criteria verify, a budget runs out, the model gives up or asks for the person, or someone
pauses, stops or kills it.

Modules, top to bottom (each imports only those below it):

* ``task_tools`` / ``task_controls`` — the tool handlers (start_task, get_status,
  wait_for_completion; pause/resume/stop/takeover/bind_target aware of tasks);
* ``supervisor`` — runs one operator run in the background and settles its end;
* ``operator`` — the loop; ``batches`` — several actions from one decision;
* ``verifying`` — running and persisting the success criteria;
* ``decision_tools`` / ``conversation`` / ``endings`` — what the model sees, the messages
  it is sent, and how an error ends (or does not end) a task.
"""
