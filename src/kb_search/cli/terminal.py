"""The terminal human output goes to: its width, whether escape codes may be used (colours,
bold, hyperlinks), the pager, and paths a person can open. Rich does the rendering; it is
imported only when something is rendered for a person, never for JSON."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

COLOR_CHOICES = ("auto", "always", "never")
# The only escape sequences kb writes itself (Rich, from styles): SGR colours and OSC 8 links
# to local files. Anything else in human output came from content or a file name.
_OWN_SEQUENCE = re.compile(r"\x1b\[[0-9;]*m|\x1b\]8;[^\x1b\x07]*;(?:file://[^\x1b\x07]*)?\x1b\\")
_SEQUENCE_OR_CONTROL = re.compile(_OWN_SEQUENCE.pattern + r"|[\x00-\x08\x0b-\x1f\x7f-\x9f]")
DEFAULT_WIDTH = 80
MAX_WIDTH = 120  # past this, lines of prose get hard to read


@dataclass
class Terminal:
    """How to write for a person. `styles`: "full" (colours, bold, links), "mono" (NO_COLOR:
    bold and links, no colours) or "none" (plain text, e.g. piped output)."""

    width: int = DEFAULT_WIDTH
    height: int | None = None
    styles: str = "none"
    is_tty: bool = False
    hyperlinks: bool = False
    cwd: Path = Path(".")
    pager: str | None = None  # the command to page long output with, None: do not page

    @classmethod
    def detect(
        cls,
        env: Mapping[str, str],
        cwd: Path,
        is_tty: bool,
        color: str | None = None,
    ) -> Terminal:
        """From the environment: COLUMNS/LINES, NO_COLOR, TERM, PAGER/KB_PAGER, --color."""
        choice = (color or env.get("KB_COLOR") or "auto").lower()
        dumb = env.get("TERM", "") == "dumb"
        if choice == "never" or (choice == "auto" and (not is_tty or dumb)):
            styles = "none"
        elif env.get("NO_COLOR") and choice != "always":
            styles = "mono"
        else:
            styles = "full"
        size = shutil.get_terminal_size((DEFAULT_WIDTH, 24)) if is_tty else None
        width = _int(env.get("COLUMNS")) or (size.columns if size else DEFAULT_WIDTH)
        height = _int(env.get("LINES")) or (size.lines if size else None)
        return cls(
            width=max(40, min(width, MAX_WIDTH)),
            height=height if is_tty else None,
            styles=styles,
            is_tty=is_tty,
            hyperlinks=styles != "none" and env.get("KB_HYPERLINKS", "1") != "0" and not dumb,
            cwd=cwd,
            pager=_pager_command(env) if is_tty else None,
        )

    # ---- rendering -----------------------------------------------------------------------

    def console(self, file: Any = None, width: int | None = None) -> Console:
        from rich.console import Console

        return Console(
            file=file,
            width=width or self.width,
            color_system=None if self.styles == "none" else "standard",
            no_color=self.styles == "mono",
            force_terminal=self.styles != "none",
            highlight=False,
            markup=False,
            emoji=False,
            legacy_windows=False,
        )

    def render(self, *renderables: Any) -> str:
        """Renderables as the text to print (escape codes only when styles allow)."""
        console = self.console()
        with console.capture() as captured:
            for renderable in renderables:
                if getattr(renderable, "verbatim", False):  # a file's own lines: never re-wrapped
                    console.print(renderable, soft_wrap=True)
                else:
                    console.print(renderable, overflow="fold")
        # Rich pads wrapped lines to the width: trailing blanks are noise in a terminal and
        # a pipe alike
        return "\n".join(line.rstrip(" ") for line in captured.get().rstrip("\n").split("\n"))

    def link(self, path: str, fragment: str = "") -> str | None:
        """A file:// URL for a terminal hyperlink, when hyperlinks are on."""
        if not self.hyperlinks or not os.path.isabs(path):
            return None
        return Path(path).as_uri() + fragment

    def show_path(self, path: str) -> str:
        """A stored absolute path as a person can open it: relative to the current directory
        when it lies below it, else absolute; control characters in it escaped."""
        from kb_search.sanitize import printable

        if not os.path.isabs(path):
            return printable(path)
        try:
            return printable(Path(path).relative_to(self.cwd))
        except ValueError:
            return printable(path)

    def clean(self, text: str) -> str:
        """Rendered output with every escape sequence or control character kb did not write
        itself escaped (newlines and tabs kept): the last guard before the terminal."""
        from kb_search.sanitize import printable

        own = self.styles != "none"

        def shown(match: re.Match[str]) -> str:
            kept = own and _OWN_SEQUENCE.fullmatch(match.group(0))
            return match.group(0) if kept else printable(match.group(0))

        return _SEQUENCE_OR_CONTROL.sub(shown, text)

    # ---- output --------------------------------------------------------------------------

    def should_page(self, text: str) -> bool:
        return bool(self.pager and self.height and text.count("\n") + 1 > self.height - 1)

    def write(self, text: str, page: bool = False) -> None:
        """Print `text`; through the pager when asked, on a terminal, and it does not fit."""
        text = self.clean(text)
        if page and self.should_page(text):
            try:
                _run_pager(self.pager or "", text)
                return
            except OSError:
                pass  # no such pager: print instead
        sys.stdout.write(text + "\n")
        sys.stdout.flush()


def _int(value: str | None) -> int | None:
    try:
        number = int(value or "")
    except ValueError:
        return None
    return number if number > 0 else None


def _pager_command(env: Mapping[str, str]) -> str | None:
    """KB_PAGER, then PAGER, then `less`; an empty value or `cat` turns paging off."""
    command = env.get("KB_PAGER", env.get("PAGER", "less"))
    if not command.strip() or command.strip() == "cat":
        return None
    return command


def _run_pager(command: str, text: str) -> None:
    env = dict(os.environ)
    env.setdefault("LESS", "FRX")  # quit if one screen, keep colours, leave the text shown
    process = subprocess.Popen(command, shell=True, stdin=subprocess.PIPE, env=env)
    try:
        assert process.stdin is not None
        process.stdin.write(text.encode("utf-8", "replace") + b"\n")
        process.stdin.close()
    except BrokenPipeError:
        pass  # the reader quit early: fine
    try:
        process.wait()
    except KeyboardInterrupt:
        process.wait()
