"""The warm search path: a per-database local server that keeps the model and the vectors
loaded, so that one-shot `kb search` calls do not load them each time.

`paths` says where a database's server lives (an owner-only runtime directory) and who it is
(`identity`); `protocol` frames messages over the unix socket; `server` is the process;
`client` is what `kb search` calls: it returns None whenever the warm path cannot answer, and
the caller then searches in-process; `front` hands a piped `kb search` to the server before the
CLI loads.
"""

from __future__ import annotations

from collections.abc import Mapping

TYPE_CHECKING = False  # typing's, without importing typing: every piped `kb search` loads this
if TYPE_CHECKING:
    from kb_search.cli.warm.client import WarmClient
    from kb_search.config import Config


def off_by_environment(env: Mapping[str, str]) -> bool:
    """KB_NO_WARM set to anything but "", 0, false or no."""
    return env.get("KB_NO_WARM", "").strip().lower() not in ("", "0", "false", "no")


def warm_enabled(config: Config, env: Mapping[str, str]) -> bool:
    """The warm path is on: the `search.warm` setting, and KB_NO_WARM not set."""
    return bool(config["search.warm"]) and not off_by_environment(env)


def warm_client(config: Config, env: Mapping[str, str]) -> WarmClient | None:
    """This database's warm client when the warm path is on (the one check of `search.warm`
    and KB_NO_WARM); None: search in-process, without importing the client."""
    if not warm_enabled(config, env):
        return None
    from kb_search.cli.warm.client import WarmClient

    return WarmClient(config, env)
