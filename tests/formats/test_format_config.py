"""JSON, YAML and TOML chunked by key path, with the file's own text and lines."""

from __future__ import annotations

import json
from pathlib import Path

from kb_search.ingest.parse import parse_file
from kb_search.parsed import ChunkSettings

SMALL = ChunkSettings(max_tokens=60, min_tokens=30)


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def assert_exact_lines(path: Path, chunks) -> None:
    """Every chunk is the file's own lines from line_start to line_end."""
    lines = path.read_text(encoding="utf-8").split("\n")
    for chunk in chunks:
        assert chunk.text == "\n".join(lines[chunk.line_start - 1 : chunk.line_end]), chunk


def env_block(name: str, count: int) -> str:
    return "".join(
        f'      - name: {name.upper()}_{i}\n        value: "v{i}"\n' for i in range(count)
    )


YAML = f"""# Helm values for the web chart.
# Edit with care.
replicaCount: 2
image:
  repository: nginx
  tag: "1.25"
containers:
  web:
    ports: [80, 443]
    env:
{env_block("web", 8)}  worker:
    env:
{env_block("worker", 8)}service:
  type: ClusterIP
"""


def test_yaml_chunks_follow_key_paths(tmp_path):
    path = write(tmp_path, "values.yaml", YAML)
    document = parse_file(path, SMALL)
    assert document.doc_type == "code" and document.language == "yaml"
    assert document.title == "values.yaml"
    assert document.metadata["chunking"] == "keys"
    headings = [c.heading for c in document.chunks]
    # The file's opening comment travels with the first key; small keys are packed together.
    assert document.chunks[0].text.startswith("# Helm values for the web chart.")
    assert headings[0] == "replicaCount, image"
    assert "containers > web > env > [0] … [3]" in headings  # list items packed up to the budget
    assert any(h.startswith("containers > worker") for h in headings)
    assert headings[-1] == "service"
    assert all(c.token_count <= SMALL.max_tokens for c in document.chunks)
    assert_exact_lines(path, document.chunks)
    env_chunks = [c for c in document.chunks if c.heading.startswith("containers > web > env")]
    assert env_chunks[0].text.lstrip().startswith("- name: WEB_0")  # list items keep their "- "


def test_yaml_whole_file_is_one_chunk_when_it_fits(tmp_path):
    path = write(tmp_path, "small.yml", "name: demo\nversion: 2\n")
    document = parse_file(path, ChunkSettings())
    assert [(c.text, c.heading, c.line_start, c.line_end) for c in document.chunks] == [
        ("name: demo\nversion: 2", None, 1, 2)
    ]


def test_yaml_documents_are_labelled_by_kind_and_name(tmp_path):
    deployment = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n" + "".join(
        f"  field{i}: value number {i} of the deployment spec\n" for i in range(12)
    )
    service = "apiVersion: v1\nkind: Service\nmetadata:\n  name: web-svc\nspec:\n  port: 80\n"
    path = write(tmp_path, "app.yaml", f"{deployment}---\n{service}---\nplain: document\n")
    document = parse_file(path, SMALL)
    headings = [c.heading for c in document.chunks]
    assert any(h.startswith("Deployment web") for h in headings)
    assert "Service web-svc" in headings
    assert "document 3" in headings
    assert_exact_lines(path, document.chunks)


def test_invalid_yaml_falls_back_to_line_chunks(tmp_path):
    template = "apiVersion: v1\nkind: ConfigMap\ndata:\n  {{- range .Values.items }}\n  a: b\n"
    path = write(tmp_path, "template.yaml", template)
    document = parse_file(path, ChunkSettings())
    assert document.metadata["chunking"] == "lines"
    assert document.metadata["parse_error"] == "invalid YAML"
    assert "range .Values.items" in document.chunks[0].text


def test_json_members_and_array_elements(tmp_path):
    data = {
        "name": "kb",
        "scripts": {f"task{i}": f"run the task number {i} with care" for i in range(15)},
        "items": [{"id": i, "label": f"item label {i}"} for i in range(12)],
    }
    path = write(tmp_path, "package.json", json.dumps(data, indent=2))
    document = parse_file(path, SMALL)
    assert document.language == "json"
    headings = [c.heading for c in document.chunks]
    assert any(h.startswith("scripts > task0") for h in headings)
    assert any(h.startswith("items > [0]") for h in headings)
    assert all(c.token_count <= SMALL.max_tokens for c in document.chunks)
    lines = path.read_text().split("\n")
    for chunk in document.chunks:
        assert chunk.text.strip() in "\n".join(lines[chunk.line_start - 1 : chunk.line_end])
    everything = " ".join(c.text for c in document.chunks)
    for i in range(15):
        assert f"task number {i} " in everything


def test_minified_json_is_split_by_keys_on_its_one_line(tmp_path):
    data = {f"key{i}": {"description": f"value {i} " + "word " * 20} for i in range(6)}
    path = write(tmp_path, "min.json", json.dumps(data, separators=(",", ":")))
    document = parse_file(path, SMALL)
    assert [c.heading for c in document.chunks] == [f"key{i}" for i in range(6)]
    assert all(c.line_start == c.line_end == 1 for c in document.chunks)
    assert document.chunks[2].text.startswith('"key2":{"description":"value 2 ')


def test_json_with_comments_falls_back(tmp_path):
    path = write(tmp_path, "tsconfig.json", '{\n  // compiler options\n  "strict": true\n}\n')
    document = parse_file(path, ChunkSettings())
    assert document.metadata["parse_error"] == "invalid JSON"
    assert "strict" in document.chunks[0].text


TOML = '''# Project settings
name = "demo"
description = """
A multi-line string that mentions
[not.a.table]
fake = "not a key"
"""

[tool.ruff]
line-length = 100
select = [
  "E",
  "F",
]

[[servers]]
host = "alpha"

[[servers]]
host = "beta"
'''


def test_toml_tables_and_arrays_of_tables(tmp_path):
    path = write(tmp_path, "pyproject.toml", TOML)
    document = parse_file(path, ChunkSettings(max_tokens=45, min_tokens=1))
    headings = [c.heading for c in document.chunks]
    assert headings == ["name", "description", "tool > ruff", "servers[0]", "servers[1]"]
    description = document.chunks[1]
    assert "[not.a.table]" in description.text and 'fake = "not a key"' in description.text
    assert (description.line_start, description.line_end) == (3, 7)
    assert document.chunks[0].text == '# Project settings\nname = "demo"'
    assert_exact_lines(path, document.chunks)


def test_invalid_toml_falls_back(tmp_path):
    path = write(tmp_path, "broken.toml", "[a]\nx = = 1\n")
    document = parse_file(path, ChunkSettings())
    assert document.metadata["parse_error"] == "invalid TOML"
