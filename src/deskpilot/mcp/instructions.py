"""The server instructions every MCP client shows its model."""

INSTRUCTIONS = """\
deskpilot lets you see and operate this Linux desktop (X11) through its accessibility tree \
and screenshots. Every action passes a kernel that checks freshness and policy.

Loop: get_app_state {app} -> read the tree and image -> one action with that state_id -> read \
the action's result. A successful action usually returns the NEW state with a new state_id: \
use it directly for the next action instead of calling get_app_state again. If the result \
says the state cannot be reused, call get_app_state.

Tool priority (use the first that fits):
1. semantic element actions: set_value, invoke_element, select_text, type_text/paste with \
element_id, perform_secondary_action;
2. click with element_id;
3. click/scroll/drag with x, y: pixels of the last image you saw for that state, origin top-left;
4. press_key for keyboard shortcuts.

state_id: single use, valid 60 s, bound to the app and your turn. Element ids are line \
numbers of one frame; never reuse them across states.

Stale: stale_frame, stale_tree and focus_mismatch are healed once automatically. If one still \
comes back, read the state again (get_app_state) and use the NEW ids. Never repeat the same \
call with the same ids. state_changed: only get_app_state on the same app is allowed until a \
new state arrives; the new state does not prove whether the failed action ran, so check the UI \
and ask the user when unsure.

actionOutcome=unknown means the action may have run: observe, never blindly repeat it. \
action_noop means nothing changed: try another element or approach. action_unconfirmed \
means the action was sent but its effect could not be seen (the result says why): look again \
before repeating it. Errors come as \
"deskpilot diagnostic: {...}" with a code. The user can pause, take over or stop at any time; \
status shows budget, recovery and halt state. open_app starts an app; start_task and the \
delegated-task tools are not available yet.
"""
