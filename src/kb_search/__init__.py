"""kb-search: local hybrid search over a personal knowledge base."""

__version__ = "0.1.0"
