"""One module per dashboard page; each offers ``routes(ctx) -> list[BaseRoute]``."""
