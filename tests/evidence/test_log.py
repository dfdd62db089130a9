"""The folder's digests, the key the Band registry page keeps its decision under: a file is read
once until written again, and one too large for any reader is never read at all."""

import hashlib
import os

from fma_bands.evidence import log
from fma_bands.evidence.log import folder_digests


def test_a_file_is_hashed_once_until_written_again_and_a_huge_one_never(tmp_path, monkeypatch):
    read: list[int] = []
    real = hashlib.file_digest

    def counted(handle, digest):  # type: ignore[no-untyped-def]
        read.append(os.fstat(handle.fileno()).st_size)
        return real(handle, digest)

    monkeypatch.setattr(log.hashlib, "file_digest", counted)
    record = tmp_path / "000001-x.dsse.json"
    record.write_text("{}")
    with (tmp_path / "huge.dsse.json").open("wb") as handle:
        handle.truncate(64 * 1024 * 1024)  # sparse: no disk, and no reader's limit takes it
    first = folder_digests(tmp_path)
    assert dict(first)["000001-x.dsse.json"] == hashlib.sha256(b"{}").hexdigest()
    assert dict(first)["huge.dsse.json"] == f"too large: {64 * 1024 * 1024} bytes"
    assert folder_digests(tmp_path) == first
    assert read == [2]  # the record once; the huge file never
    # The same size, written again: another digest.
    record.write_text("[]")
    assert dict(folder_digests(tmp_path))["000001-x.dsse.json"] == hashlib.sha256(b"[]").hexdigest()
    assert read == [2, 2]
