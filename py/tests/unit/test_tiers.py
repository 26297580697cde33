"""The tiers of tests/conftest.py: the markers a test gets at collection, -m selecting by them, and the tests that
re-run a whole-checkout gate skipped when scripts/test ran that gate. Checked on a small tree of tests collected
by a pytest of its own, with this checkout's conftest and pytest settings."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ..conftest import REPO

TREE = {
    "tests/unit/test_plain.py": """
import pytest

@pytest.fixture()
def tiny_cross_encoder():
    return None

def test_plain():
    pass

def test_with_the_database(clean_db):
    pass

@pytest.mark.slow
def test_marked_slow():
    pass

def test_with_torch(tiny_cross_encoder):
    pass

@pytest.mark.repo_gate("oracle_parse")
def test_gate_over_the_checkout():
    pass
""",
    "tests/integration/test_cli.py": "def test_a_command():\n    pass\n",
    "tests/browser/test_page.py": "def test_the_page():\n    pass\n",
    "tests/conformance/test_cases.py": """
import pytest

@pytest.fixture(params=["postgresql", "oracle"])
def engine(request):
    return request.param

def test_case(engine):
    pass
""",
}
#: At the root of the tree, beside tests/: writes what each collected test carries.
PROBE = """
import json, os

def pytest_collection_finish(session):
    with open(os.environ["TIERS_OUT"], "w") as out:
        json.dump({item.nodeid: sorted({mark.name for mark in item.iter_markers()}) for item in session.items}, out)
"""


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("tiers")
    for folder in ("tests", "tests/unit", "tests/integration", "tests/browser", "tests/conformance"):
        (root / folder).mkdir(exist_ok=True)
        (root / folder / "__init__.py").write_text("")
    shutil.copy(REPO / "py" / "tests" / "conftest.py", root / "tests" / "conftest.py")
    for path, text in TREE.items():
        (root / path).write_text(text)
    (root / "conftest.py").write_text(PROBE)
    return root


def collected(tree: Path, *args: str, gates: str = "") -> dict[str, list[str]]:
    out = tree / "tiers.json"
    env = dict(os.environ, TIERS_OUT=str(out), CTXASM_GATES_PASSED=gates)
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                           "-c", str(REPO / "py" / "pyproject.toml"), "--rootdir", str(tree), *args, "tests"],
                          cwd=tree, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return {node.split("::", 1)[1]: marks for node, marks in json.loads(out.read_text()).items()}


def test_every_test_gets_its_tier_at_collection(tree):
    marks = collected(tree)
    assert marks["test_plain"] == ["unit"]
    assert marks["test_with_the_database"] == ["db"]
    assert marks["test_marked_slow"] == ["slow", "unit"]
    assert marks["test_with_torch"] == ["slow", "unit"]
    assert marks["test_a_command"] == ["db"]
    assert marks["test_the_page"] == ["browser"]
    assert marks["test_case[postgresql]"] == ["db"]
    assert marks["test_case[oracle]"] == ["oracle"]
    assert "skip" not in marks["test_gate_over_the_checkout"]


def test_markers_select_as_scripts_test_fast_does(tree):
    fast = collected(tree, "-m", "not slow and not browser and not oracle")
    assert set(fast) == {"test_plain", "test_with_the_database", "test_gate_over_the_checkout", "test_a_command",
                         "test_case[postgresql]"}


def test_a_gate_scripts_test_ran_is_not_run_again(tree):
    marks = collected(tree, gates="ruff oracle_parse")
    assert "skip" in marks["test_gate_over_the_checkout"]
    assert "skip" not in marks["test_plain"]
