"""Log lines of the libraries kb uses go to the data dir's log file, not the terminal: a real
`kb add` process (with a spawned parser worker) on a DOCX whose hyperlink has an unsafe
scheme, which Docling's serializer reports through `logging`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("docling")
docx = pytest.importorskip("docx")

from docx.opc.constants import RELATIONSHIP_TYPE  # noqa: E402
from docx.oxml.shared import OxmlElement, qn  # noqa: E402

from kb_search.formats.docling import docling_available  # noqa: E402

pytestmark = pytest.mark.skipif(
    docling_available("docx") is not None, reason=str(docling_available("docx"))
)
TESTS = Path(__file__).resolve().parents[1]
SRC = TESTS.parent / "src"
RUN_KB = (
    "import sys, kb_testing; kb_testing.register_test_embedder();"
    " from kb_search.cli import main; main(sys.argv[1:])"
)


def unsafe_link_docx(path: Path) -> Path:
    document = docx.Document()
    document.add_heading("Links", 1)
    paragraph = document.add_paragraph("Read the manual before you start: ")
    target = "javascript:alert(1)"
    rel = paragraph.part.relate_to(target, RELATIONSHIP_TYPE.HYPERLINK, is_external=True)
    link = OxmlElement("w:hyperlink")
    link.set(qn("r:id"), rel)
    run = OxmlElement("w:r")
    text = OxmlElement("w:t")
    text.text = "click here for the manual"
    run.append(text)
    link.append(run)
    paragraph._p.append(link)
    document.save(path)
    return path


def test_a_library_warning_goes_to_the_data_dir_log_not_stderr(tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    unsafe_link_docx(folder / "links.docx")
    data = tmp_path / "data"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(SRC), str(TESTS)]),
        "HOME": str(tmp_path),
        "KB_MODEL": "kb-test/hash-64",
        "KB_NO_WARM": "1",
        "HF_HUB_OFFLINE": "1",
    }
    env.pop("KB_LOG_FILE", None)
    result = subprocess.run(
        [sys.executable, "-c", RUN_KB, "--data-dir", str(data), "add", str(folder),
         "--workers", "1", "--format", "json"],
        env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "Dropping hyperlink" not in result.stderr
    log = (data / "kb.log").read_text(encoding="utf-8")
    assert "Dropping hyperlink with unsafe scheme" in log
    assert "docling_core" in log
