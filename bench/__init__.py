"""kb's benchmarks, one module each, run as `python -m bench NAME [ARGS]` from the repository root
(`python -m bench` lists them). `bench.harness` holds what they share. Results and the commands
that produced them: docs/benchmarks.md."""
