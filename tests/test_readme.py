"""Every Python block of the README and of the guide pages that hold its former examples runs
on its own, as written, without warnings."""
import re
import warnings
from pathlib import Path

import pytest

pytestmark = pytest.mark.repository          # reads the repository's README.md and docs/

ROOT = Path(__file__).resolve().parents[1]
PAGES = ["README.md", "docs/guide/choosing.md", "docs/guide/files.md"]
BLOCKS = [(page, code) for page in PAGES if (ROOT / page).is_file()
          for code in re.findall(r"```python\n(.*?)```", (ROOT / page).read_text(), re.S)]


def test_the_readme_and_the_guide_have_their_examples():
    assert sum(page == "README.md" for page, _ in BLOCKS) >= 1
    assert len(BLOCKS) >= 10


@pytest.mark.parametrize("number", range(len(BLOCKS)))
def test_readme_block_runs_alone(number, tmp_path, monkeypatch, capsys):
    page, code = BLOCKS[number]
    monkeypatch.chdir(tmp_path)                  # blocks may write files
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        exec(compile(code, f"{page} python block {number}", "exec"), {})
    assert capsys.readouterr().out.strip(), "an example should show its result"
