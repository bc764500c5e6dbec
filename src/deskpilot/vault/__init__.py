"""The encrypted snapshot vault, redaction and preview capabilities.

(The credential-app blocklist is :mod:`deskpilot.protocol.privacy`: the host enforces it too.)

Modules, by what they hold:

* :mod:`~deskpilot.vault.images` — PNG limits, redaction, preview / evidence / model frames;
* :mod:`~deskpilot.vault.crypto`, :mod:`~deskpilot.vault.keys`,
  :mod:`~deskpilot.vault.store` — the AES-256-GCM file format, the installation key, files;
* :mod:`~deskpilot.vault.retention` — ``VaultPolicy``, maintenance and its scheduler;
* :mod:`~deskpilot.vault.capabilities`, :mod:`~deskpilot.vault.preview` — preview tokens and
  the preview endpoint's rules (served by :mod:`deskpilot.web.preview`);
* :mod:`~deskpilot.vault.service` — ``SnapshotService``, the API the runtime and MCP call.

Nothing is imported here, so importing one module does not pull in the others.
"""
