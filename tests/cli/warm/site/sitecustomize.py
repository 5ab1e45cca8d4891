"""Put on PYTHONPATH by tests/cli/warm so that the warm servers they start (separate processes)
know the test embedders, as the test process does."""

try:
    from warm_harness import register_other_embedder

    import kb_testing
except ImportError:  # tests/ is not on the path: nothing to register
    pass
else:
    kb_testing.register_test_embedder()
    register_other_embedder()
