"""The README's Python examples run as written, without warnings."""
import re
import warnings
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_examples_run(capsys):
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    assert len(blocks) >= 4
    namespace = {}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for number, block in enumerate(blocks):
            exec(compile(block, f"README.md python block {number}", "exec"), namespace)
