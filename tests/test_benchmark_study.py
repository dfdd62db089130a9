"""The benchmarks' studies are the same in every process: nothing they draw depends on the order
Python happens to iterate a set of strings in (PYTHONHASHSEED), so two runs time the same work."""

import os
import subprocess
import sys

from tests.conftest import ROOT

DIGEST = """
import hashlib, tempfile
from pathlib import Path
from benchmarks.generate_study import generate_study
from benchmarks.study_files import write_vignettes
digest = hashlib.sha256(repr(generate_study(40, 4)).encode())
folder = write_vignettes(Path(tempfile.mkdtemp()) / "v", 12, seed=7)
for path in sorted(folder.iterdir()):
    digest.update(path.read_bytes())
print(digest.hexdigest())
"""


def _digest(hash_seed: str) -> str:
    env = os.environ | {"PYTHONHASHSEED": hash_seed}
    result = subprocess.run(
        [sys.executable, "-c", DIGEST], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout.strip()


def test_the_benchmark_study_does_not_depend_on_the_hash_seed():
    assert _digest("1") == _digest("2") == _digest("12345")
