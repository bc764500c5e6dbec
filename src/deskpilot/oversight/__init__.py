"""deskpilot.oversight: the person's side of deskpilot, independent of HTTP.

What the dashboard (``deskpilot.web``) shows and does lives here as plain functions and small
classes over the store, the kernel's control channel and the vault: the sessions list and the
timeline folded into cards, readiness, settings forms, the live frame source, the error table
and the English/Chinese message table. The web layer only translates requests to these and
renders their results (docs/dashboard.md).
"""
