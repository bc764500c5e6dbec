"""Messages of the dashboard's live page: key -> (English, Chinese)."""

MESSAGES: dict[str, tuple[str, str]] = {}
