"""Messages of the dashboard's errors page: key -> (English, Chinese)."""

MESSAGES: dict[str, tuple[str, str]] = {}
