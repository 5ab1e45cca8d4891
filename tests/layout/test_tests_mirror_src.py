"""tests/ mirrors src/: the tests of `kb_search/<package>/` live in `tests/<package>/` (the base
modules at the top of `kb_search/` in `tests/core/`), so a newcomer finds a module's tests from
its path. Suites that cut across packages keep their own folders; no test file sits at the root
of tests/, where only the root conftest and the helpers shared by several folders live."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
PACKAGE = TESTS.parent / "src" / "kb_search"

# The tests of the base modules (knowledge_base, config, settings, doctor, ...).
CORE = "core"
# Suites that test the whole product from one angle, not one package; `data` holds fixtures and
# `bench` tests the repository's bench/ tool, which is not part of the package.
CROSS_CUTTING = {"adversarial", "security", "layout", "docs", "data", "bench"}


def is_test_file(path: Path) -> bool:
    return path.suffix == ".py" and (path.name.startswith("test_") or path.stem.endswith("_test"))


def src_packages() -> list[Path]:
    """Every package below kb_search, as a path relative to it (kb_search itself excluded)."""
    return sorted(
        init.parent.relative_to(PACKAGE)
        for init in PACKAGE.rglob("__init__.py")
        if init.parent != PACKAGE
    )


def test_the_package_list_is_read_from_src():
    # Guards the tests below against passing on an empty list (a moved src/, a changed name).
    assert Path("search") in src_packages()
    assert Path("cli/warm") in src_packages()


def test_every_src_package_has_a_tests_folder_with_tests():
    wanted = [*src_packages(), Path(CORE)]
    missing = [
        str(package)
        for package in wanted
        if not any(is_test_file(path) for path in (TESTS / package).glob("*.py"))
    ]
    assert missing == [], f"src packages without tests/<package>/test_*.py: {missing}"


def test_no_test_file_at_the_root_of_tests():
    at_root = sorted(path.name for path in TESTS.glob("*.py") if is_test_file(path))
    assert at_root == [], f"move these into tests/<package>/: {at_root}"


def test_every_tests_folder_mirrors_a_package_or_is_a_named_suite():
    known = {package.parts[0] for package in src_packages()} | {CORE}
    known |= CROSS_CUTTING
    folders = sorted(
        path.name
        for path in TESTS.iterdir()
        if path.is_dir() and not path.name.startswith((".", "__"))
    )
    strays = [name for name in folders if name not in known]
    assert strays == [], f"tests/ folders that mirror no src package: {strays}"
