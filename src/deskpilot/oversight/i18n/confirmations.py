"""Messages of the dashboard's confirmations page: key -> (English, Chinese)."""

MESSAGES: dict[str, tuple[str, str]] = {}
