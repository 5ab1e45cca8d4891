import codecs
import os

import pytest

from kb_search.formats.reader import read_text_file
from kb_search.parsed import IngestError


def write(tmp_path, data: bytes, name: str = "f.txt"):
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_utf8_bom_is_stripped_and_newlines_normalised(tmp_path):
    path = write(tmp_path, codecs.BOM_UTF8 + "héllo\r\nworld\rend".encode())
    assert read_text_file(path) == "héllo\nworld\nend"


def test_non_utf8_falls_back_to_cp1252(tmp_path):
    path = write(tmp_path, b"caf\xe9 \x93quoted\x94")
    assert read_text_file(path) == "café \u201cquoted\u201d"


def test_bytes_undefined_in_cp1252_fall_back_to_latin1(tmp_path):
    path = write(tmp_path, b"abc \x81 def")
    assert read_text_file(path) == "abc \x81 def"


def test_utf16_with_bom(tmp_path):
    path = write(tmp_path, "grüße\r\nzwei".encode("utf-16"))
    assert read_text_file(path) == "grüße\nzwei"


def test_nul_bytes_mean_binary(tmp_path):
    path = write(tmp_path, b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    with pytest.raises(IngestError, match="binary"):
        read_text_file(path)


def test_many_control_characters_mean_binary(tmp_path):
    path = write(tmp_path, bytes(range(1, 8)) * 50 + b"some text")
    with pytest.raises(IngestError, match="binary"):
        read_text_file(path)


@pytest.mark.parametrize("data", [b"", b"  \n\t\r\n  "])
def test_empty_or_whitespace_file(tmp_path, data):
    with pytest.raises(IngestError, match="^empty file$"):
        read_text_file(write(tmp_path, data))


def test_file_over_cap(tmp_path):
    path = write(tmp_path, b"x" * 1_500_000)
    with pytest.raises(IngestError, match=r"^file too large: 1\.5 MB > cap 1 MB$"):
        read_text_file(path, max_bytes=1_000_000)


def test_directory_and_missing_file(tmp_path):
    with pytest.raises(IngestError, match="directory"):
        read_text_file(tmp_path)
    with pytest.raises(IngestError, match="not found"):
        read_text_file(tmp_path / "nope.txt")


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root reads anything")
def test_unreadable_file(tmp_path):
    path = write(tmp_path, b"secret")
    path.chmod(0)
    try:
        with pytest.raises(IngestError, match="permission denied"):
            read_text_file(path)
    finally:
        path.chmod(0o600)
