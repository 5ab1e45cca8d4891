"""The warm search path: a per-database local server that keeps the model and the vectors
loaded, so that one-shot `kb search` calls do not load them each time.

`paths` says where a database's server lives (an owner-only runtime directory) and who it is
(`identity`); `protocol` frames messages over the unix socket; `server` is the process;
`client` is what `kb search` calls: it returns None whenever the warm path cannot answer, and
the caller then searches in-process.
"""
