"""The host client: spawn + framed IO + FIFO lane + timeouts, supervisor, backend.

Import what you need from its modules (``api`` for the interface, ``backend.HostBackend`` for
the implementation); this package module stays empty so that importing the interface does
not start anything or pull in the vault. See docs/hostclient.md.
"""
