"""A dotfiles folder is read, but a settings file that holds a password or token is left out
(counted with the unsupported files), in `kb add` and in `kb sync`, whatever
`--include-generated` says; a file the user names is still read."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from kb_search.formats.registry import SECRET, UNSUPPORTED, classify
from kb_search.formats.secrets import holds_secret

SECRETS = {
    ".gitconfig": "[user]\n  name = Alice\n[github]\n  token = ghp_AbCdEf0123456789AbCdEf01234\n",
    ".hgrc": "[auth]\nx.prefix = hg.example.com\nx.username = alice\nx.password = hgpass66\n",
    ".curlrc": 'user = "alice:hunter2pw"\n--silent\n',
    ".wgetrc": "http_user = alice\nhttp_password = wgetpass77\n",
    ".muttrc": 'set imap_user = alice\nset imap_pass = "muttpass55"\n',
    ".bashrc": "alias ll='ls -l'\nexport GITHUB_TOKEN=ghp_ZyXw0123456789ZyXw0123456789zyxwvu\n",
    "bashrc": "export AWS_ACCESS_KEY_ID=AKIAABCDEFGHIJKLMNOP\n",
    ".psqlrc": "\\set PROMPT1 '%n@%/ '\n-- https://alice:s3cretPW@db.example.com/\n",
    # kept without their dot in a dotfiles folder: read as text, as any file without an extension
    "muttrc": 'set smtp_pass = "muttpass56"\n',
    "gitconfig": '[url "https://alice:s3cretPAT99@git.example.com/"]\n  insteadOf = x\n',
    "netrc": "machine example.com\n  login alice\n  password netrcpass1\n",
    "credentials": "[default]\naws_region = eu-west-1\n",  # by its name alone
}
CLEAN = {
    ".gitconfig": "[user]\n  name = Alice\n[credential]\n  helper = store\n",
    ".bashrc": (
        "export PASSWORD_STORE_DIR=~/.password-store\nexport GITHUB_TOKEN=$(pass show gh)\n"
        'HISTIGNORE="*password*"\nalias ll="ls -l"\n'
    ),
    ".inputrc": "set editing-mode vi\n",
    # names that only start with a keyword: an alias, a command that fetches the secret
    ".bash_aliases": "alias passgen='pwgen -s 20'\nalias tokens='wc -w'\n",
    ".muttrc": 'set imap_user = alice\nset imap_pass_cmd = "pass show mail"\n',
    ".profile": "export PASSWORD_MIN_LENGTH=12\nexport SECRETS_DIR=$HOME/vault\n",
    ".curlrc": "--silent\nuser-agent = kb\n",
    "vimrc": "set number\nset nopaste\n",
    "README": "Install\n\nSet password = hunter2 in the file https://a:b@host/.\n",
}


@pytest.mark.parametrize("name", sorted(SECRETS))
def test_a_settings_file_holding_a_secret_is_left_out(tmp_path: Path, name: str):
    path = tmp_path / name
    path.write_text(SECRETS[name])
    verdict = classify(path)
    assert (verdict.format, verdict.left_out, verdict.kind) == (None, UNSUPPORTED, SECRET)
    assert classify(path, include_generated=True).format is None
    assert classify(path, named=True).format is not None  # the user's own choice


@pytest.mark.parametrize("name", sorted(CLEAN))
def test_a_settings_file_without_a_secret_is_read(tmp_path: Path, name: str):
    path = tmp_path / name
    path.write_text(CLEAN[name])
    verdict = classify(path)
    assert verdict.format is not None and verdict.left_out is None


def test_a_document_that_talks_about_passwords_is_read(tmp_path: Path):
    path = tmp_path / "setup.md"
    path.write_text("# Setup\n\nSet password = hunter2 in the file https://a:b@host/.\n")
    assert classify(path).format is not None


@pytest.mark.parametrize("unit", ["token", "pass", "password ", "user:", "-----BEGIN ", "a://b:c"])
def test_holds_secret_is_linear_on_hostile_text(unit: str):
    text = unit * (1_000_000 // len(unit))
    start = time.perf_counter()
    holds_secret(text)
    assert time.perf_counter() - start < 2.0


def test_add_leaves_out_dotfiles_with_secrets_and_says_why(kb, tmp_path: Path):
    folder = tmp_path / "dotfiles"
    folder.mkdir()
    for name, text in SECRETS.items():
        (folder / name).write_text(text)
    (folder / ".inputrc").write_text(CLEAN[".inputrc"])
    summary = kb.json("add", str(folder))
    assert summary["added"] == 1
    assert summary["unsupported_kinds"] == {"secret": len(SECRETS)}
    assert "settings files holding passwords or tokens" in summary["summary"]
    for word in ("hunter2pw", "wgetpass77", "muttpass55", "hgpass66", "s3cretPW"):
        assert kb.json("search", word, "--mode", "lexical")["results"] == []


def test_sync_drops_a_dotfile_that_gained_a_secret(kb, tmp_path: Path):
    folder = tmp_path / "dotfiles"
    folder.mkdir()
    bashrc = folder / ".bashrc"
    bashrc.write_text("alias ll='ls -l'\n")
    assert kb.json("add", str(folder))["added"] == 1
    bashrc.write_text("alias ll='ls -l'\nexport API_KEY=sekrit4242\n")
    summary = kb.json("sync")
    assert summary["excluded"] == {UNSUPPORTED: 1} and summary["updated"] == 0
    assert kb.json("search", "sekrit4242", "--mode", "lexical")["results"] == []


def test_sync_drops_an_unchanged_dotfile_with_a_secret_an_older_kb_read(
    kb, tmp_path: Path, monkeypatch
):
    folder = tmp_path / "dotfiles"
    folder.mkdir()
    (folder / ".wgetrc").write_text(SECRETS[".wgetrc"])
    monkeypatch.setattr("kb_search.formats.secrets.holds_secret", lambda text: False)
    assert kb.json("add", str(folder))["added"] == 1  # as the kb before this rule read it
    monkeypatch.undo()
    summary = kb.json("sync")
    assert summary["excluded"] == {UNSUPPORTED: 1}
    assert kb.json("search", "wgetpass77", "--mode", "lexical")["results"] == []


def test_reindex_drops_a_stored_dotfile_with_a_secret_an_older_kb_read(
    kb, tmp_path: Path, monkeypatch
):
    """Old code: `kb reindex` embedded the stored chunks of a `.bashrc` an older kb indexed,
    token and all; the document must leave the index, as on `kb sync`."""
    folder = tmp_path / "dotfiles"
    folder.mkdir()
    (folder / ".bashrc").write_text(SECRETS[".bashrc"])
    (folder / ".inputrc").write_text(CLEAN[".inputrc"])
    monkeypatch.setattr("kb_search.formats.secrets.holds_secret", lambda text: False)
    assert kb.json("add", str(folder))["added"] == 2  # as the kb before this rule read it
    monkeypatch.undo()
    (folder / ".bashrc").unlink()  # judged by the stored text, whatever the file is now
    summary = kb.json("reindex")
    assert summary["excluded"] == {UNSUPPORTED: 1}, summary
    assert (
        kb.json("search", "ghp_ZyXw0123456789ZyXw0123456789zyxwvu", "--mode", "lexical")["results"]
        == []
    )
    assert [Path(d["path"]).name for d in kb.json("list")["documents"]] == [".inputrc"]
    assert kb.json("reindex")["excluded"] == {}
