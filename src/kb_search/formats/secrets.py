"""Settings files that hold a password or token: left out of a folder's walk.

A dotfiles folder is read (`sniff.name_kind`), but `.bashrc`, `.gitconfig`, `.hgrc`,
`.curlrc`, `.wgetrc` and `.muttrc` often carry a credential (`export GITHUB_TOKEN=...`,
`[auth] x.password = ...`, `set imap_pass = ...`, `user = name:password`, a URL with its
userinfo). Indexed, it would be served to whoever searches the index (an agent's context, a
`kb export` copy). Such a file is counted with the unsupported files ("settings files
holding a password or token"); naming it on the command line still reads it.

Every pattern is bounded and gives back nothing it took (possessive), so a file of a
megabyte of `tokentoken...` is read in linear time.
"""

from __future__ import annotations

import re
from pathlib import Path

from kb_search.formats import compressed, sniff

SCAN_BYTES = 1_000_000  # a settings file is small: the first megabyte is looked through

# `name = value`, `name: value`, `export NAME=value`, `set name="value"` where the name ends
# in password, secret, token or key (`GITHUB_TOKEN`, `x.password`, `imap_pass`; not `passgen`,
# `password_cmd` or `PASSWORD_STORE_DIR`); a value that is a variable, a command, a placeholder
# or a path is none.
_ASSIGNED = re.compile(
    r"(?:pass(?:word|wd|phrase)?|secret|token|api_?key|access_?key|credentials?)"
    r"[\"']?[ \t]{0,20}[=:][ \t]{0,20}[\"']?[^\s\"'$`{<%~/(]",
    re.I,
)
# a URL with a password in it: https://user:password@host/
_USERINFO = re.compile(
    r"(?<![\w+.-])[a-z][a-z0-9+.-]{0,20}+://[^\s/:@]{1,200}+:[^\s/@]{1,200}+@", re.I
)
# curl's `user = "name:password"` / `-u name:password`
_CURL_USER = re.compile(
    r"^[ \t]*(?:-u|--user|user)[ \t]*[=:]?[ \t]*[\"']?[^\s:\"']{1,200}:\S", re.M
)
# tokens by their shape: GitHub, GitLab, Slack, AWS, OpenAI-style keys; private keys
_TOKEN = re.compile(
    r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_\w{30,}|glpat-[\w-]{20,}|xox[abprs]-[\w-]{10,}"
    r"|AKIA[0-9A-Z]{16}|sk-[A-Za-z0-9_-]{20,})|-----BEGIN [A-Z ]{0,30}PRIVATE KEY-----"
)
# netrc's `machine host login name password secret`
_NETRC = re.compile(r"(?:^|[ \t])(?:password|passwd)[ \t]{1,20}+[^\s<$\"'{]", re.M)
_PATTERNS = (_ASSIGNED, _USERINFO, _CURL_USER, _TOKEN, _NETRC)
# Files that hold nothing but credentials, kept without their dot in a dotfiles folder (read
# as text there, as any file without an extension is): left out by their name.
CREDENTIAL_NAMES = frozenset({
    "netrc", "pgpass", "pypirc", "npmrc", "credentials", "git-credentials", "htpasswd",
    "id_rsa", "id_dsa", "id_ecdsa", "id_ed25519",
})  # fmt: skip


def is_settings_file(path: Path) -> bool:
    """A hidden file, a shell startup file, or one of a person's settings files kept without
    its dot (`muttrc`, `gitconfig`, any `...rc`): where people keep credentials."""
    name = compressed.inner_path(path)
    bare = name.name.lower().lstrip(".")
    return (
        name.name.startswith(".")
        or sniff.name_kind(name) is not None
        or f".{bare}" in sniff.PERSONAL_DOTFILES
        or f".{bare}" in sniff.SHELL_DOTFILES
        or bare in CREDENTIAL_NAMES
        or (bare.endswith("rc") and not name.suffix)
    )


def is_credential_store(path: Path) -> bool:
    """A file that holds credentials by its name (`netrc`, `credentials`, `id_rsa`)."""
    return compressed.inner_path(path).name.lower().lstrip(".") in CREDENTIAL_NAMES


def holds_secret(text: str) -> bool:
    """Whether the text assigns a password, token or key, or holds a URL with a password or a
    token of a known shape."""
    return any(pattern.search(text) for pattern in _PATTERNS)
