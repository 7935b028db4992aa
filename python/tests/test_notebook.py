"""The notebook in docs/python/ runs top to bottom without an error (nbconvert --execute)."""

import subprocess
import sys

from conftest import REPO


def test_seed001_notebook_executes(tmp_path):
    notebook = REPO / "docs" / "python" / "seed001-ber.ipynb"
    done = subprocess.run(
        [sys.executable, "-m", "nbconvert", "--to", "notebook", "--execute", "--ExecutePreprocessor.timeout=120",
         "--output-dir", str(tmp_path), str(notebook)],
        capture_output=True, text=True,
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "seed001-ber.ipynb").is_file()
