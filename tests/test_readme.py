"""Every Python block of the README runs on its own, as written, without warnings."""
import re
import warnings
from pathlib import Path

import pytest

pytestmark = pytest.mark.repository          # reads the repository's README.md

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text() if README.is_file() else "", re.S)


def test_the_readme_has_its_examples():
    assert len(BLOCKS) >= 5


@pytest.mark.parametrize("number", range(len(BLOCKS)))
def test_readme_block_runs_alone(number, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)                  # blocks may write files
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        exec(compile(BLOCKS[number], f"README.md python block {number}", "exec"), {})
    assert capsys.readouterr().out.strip(), "a README example should show its result"
