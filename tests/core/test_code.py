"""fma-bands' code as one digest (fma_bands/core/code.py)."""

from fma_bands.core import code
from fma_bands.core.code import code_digest


def test_the_code_digest_covers_every_file_of_the_package(tmp_path, monkeypatch):
    package = tmp_path / "fma_bands"
    (package / "core").mkdir(parents=True)
    (package / "agreement").mkdir()
    (package / "agreement" / "coverage.json").write_text("{}")
    (package / "cli.py").write_text("# the table's layout\n")
    (package / "core" / "__pycache__").mkdir()
    (package / "core" / "__pycache__" / "code.cpython-311.pyc").write_bytes(b"compiled")
    monkeypatch.setattr(code, "__file__", str(package / "core" / "code.py"))
    digests = []
    changes = (None, package / "cli.py", package / "agreement" / "coverage.json")
    try:
        for change in changes:
            if change is not None:
                change.write_text(change.read_text() + " ")
            code_digest.cache_clear()
            digests.append(code_digest())
        # What Python compiles is not the code: the same files, the same digest.
        (package / "core" / "__pycache__" / "code.cpython-311.pyc").write_bytes(b"again")
        code_digest.cache_clear()
        assert code_digest() == digests[-1]
        # Another version of a library the answer is made with is another digest.
        assert code_digest("PyYAML") != code_digest("cryptography") != digests[-1]
    finally:
        code_digest.cache_clear()
    assert len(set(digests)) == 3
