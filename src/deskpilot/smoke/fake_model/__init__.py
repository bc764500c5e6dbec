"""A scripted OpenAI-compatible model for the smoke self-tests (and the offline tests).

``server`` is the HTTP server, ``reading`` reads a request like a model would, ``replies``
builds what it answers; the reference policies that solve each smoke case live beside them.
"""
