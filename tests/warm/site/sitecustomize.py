"""Put on PYTHONPATH by tests/warm so that the warm servers they start (separate processes)
know the test embedder, as the test process does."""

try:
    import kb_testing
except ImportError:  # tests/ is not on the path: nothing to register
    pass
else:
    kb_testing.register_test_embedder()
