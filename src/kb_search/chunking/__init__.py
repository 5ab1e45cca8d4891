"""Cutting parsed text into chunks that fit the embedding model: units, the
cheapest cut, tables by rows, token budgets, caps."""
