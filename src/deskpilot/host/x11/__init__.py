"""The host's X11 side: one persistent connection, window listing, capture and XTEST input."""
