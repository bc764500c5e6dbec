"""Messages of the dashboard's settings page: key -> (English, Chinese)."""

MESSAGES: dict[str, tuple[str, str]] = {}
