"""Messages of the dashboard's readiness page: key -> (English, Chinese)."""

MESSAGES: dict[str, tuple[str, str]] = {}
