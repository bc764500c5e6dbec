"""Messages of the dashboard's sessions page: key -> (English, Chinese)."""

MESSAGES: dict[str, tuple[str, str]] = {}
