"""Settings: only the study's signed log writes into the attestations folder; a path setting
is what it is for; an FMA_BANDS_* variable nothing reads is refused by name."""

import re
from pathlib import Path

import pytest

from fma_bands.core.errors import FmaBandsError
from fma_bands.core.settings import PREFIX, known_variables, load_settings


@pytest.mark.parametrize("name", ["export_dir", "identity_key"])
@pytest.mark.parametrize("inside", ["attestations", "attestations/sub/file"])
def test_nothing_else_lives_in_the_attestations_folder(tmp_path, name, inside):
    with pytest.raises(FmaBandsError, match=f"setting {name} .*only the study's signed log"):
        load_settings(attestations=tmp_path / "attestations", **{name: tmp_path / inside})


def test_beside_the_attestations_folder_is_fine(tmp_path):
    found = load_settings(
        attestations=tmp_path / "attestations",
        export_dir=tmp_path / "exports",
        identity_key=tmp_path / "identity.key",
    )
    assert found.export_dir == tmp_path / "exports"


def _file(tmp_path):
    (tmp_path / "f").write_text("x")
    return tmp_path / "f"


def _loop(tmp_path):
    (tmp_path / "l1").symlink_to(tmp_path / "l2")
    (tmp_path / "l2").symlink_to(tmp_path / "l1")
    return tmp_path / "l1"


@pytest.mark.parametrize(
    ("name", "make", "why"),
    [
        ("attestations", _file, "is not a folder"),
        ("vignettes", _file, "is not a folder"),
        ("attestations", lambda t: Path("/dev/null"), "is not a folder"),
        ("identity_key", lambda t: t, "is a folder"),
        ("attestations", _loop, "cannot be looked up"),
        ("identity_key", _loop, "cannot be looked up"),
        ("vignettes", lambda t: t / ("a" * 300), "cannot be looked up"),
    ],
)
def test_a_path_setting_that_cannot_be_what_it_is_for_is_refused_by_name(tmp_path, name, make, why):
    """Before any command uses it (a file where the log's folder should be once crashed every
    command that opens the store)."""
    others = {"attestations": tmp_path / "att", "identity_key": tmp_path / "id.key"}
    with pytest.raises(FmaBandsError, match=f"setting {name} .*{why}") as refused:
        load_settings(**{**others, name: make(tmp_path)})
    assert refused.value.field == name


def test_a_misspelt_variable_is_refused_by_its_name(monkeypatch):
    monkeypatch.setenv(PREFIX + "ATTESTATION", "elsewhere")
    with pytest.raises(FmaBandsError, match="did you mean FMA_BANDS_ATTESTATIONS") as refused:
        load_settings()
    assert refused.value.field == PREFIX + "ATTESTATION"
    assert str(refused.value).startswith(PREFIX + "ATTESTATION: ")


def test_a_variable_like_no_setting_is_refused_without_a_guess(monkeypatch):
    monkeypatch.setenv(PREFIX.lower() + "zzz", "1")  # matched whatever its case, as settings are
    with pytest.raises(FmaBandsError, match="is no setting of fma-bands: unset it"):
        load_settings()


def test_every_variable_something_reads_is_allowed(monkeypatch, tmp_path):
    for name in known_variables():
        monkeypatch.setenv(name, "")
    for name in ("LOG_FILE", "VIGNETTES", "ATTESTATIONS", "EXPORT_DIR", "TRAJECTORIES"):
        monkeypatch.setenv(PREFIX + name, str(tmp_path / name.lower()))
    monkeypatch.setenv(PREFIX + "IDENTITY_KEY", str(tmp_path / "identity.key"))
    monkeypatch.setenv(PREFIX + "KEPT_ANSWERS", str(tmp_path / "kept"))
    monkeypatch.setenv(PREFIX + "DATABASE_URL", "sqlite:///study.db")
    monkeypatch.setenv(PREFIX + "IDLE_MINUTES", "5")
    monkeypatch.setenv(PREFIX + "LOG_LEVEL", "info")
    found = load_settings()
    assert (found.idle_minutes, found.log_level) == (5, "INFO")


def test_every_variable_named_in_the_repository_is_known():
    """A variable added to the code, the tests, CI or the docs must be added to the settings or
    to OTHER_VARIABLES, or every command would refuse to run where it is set."""
    root = Path(__file__).resolve().parents[2]
    pattern = re.compile(PREFIX + r"[A-Z0-9_]*[A-Z0-9]")
    named: dict[str, str] = {}
    folders = ("fma_bands", "app_pages", "tests", "docs", "benchmarks", ".ci")
    files = [root / "app.py", root / "README.md"]
    files += [p for f in folders for p in (root / f).rglob("*") if p.is_file()]
    for path in files:
        if path.suffix not in {".py", ".md", ".toml", ".yaml", ".sh", ""}:
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        for name in pattern.findall(text):
            named.setdefault(name, str(path.relative_to(root)))
    unknown = {n: where for n, where in named.items() if n not in known_variables()}
    assert not unknown, f"FMA_BANDS_* variables nothing allows: {unknown}"


def test_the_log_level_is_a_level_by_name_in_any_case():
    assert load_settings(log_level="debug").log_level == "DEBUG"
    assert load_settings().log_level == "ERROR"
    with pytest.raises(FmaBandsError, match=r"setting log_level \(FMA_BANDS_LOG_LEVEL\)"):
        load_settings(log_level="verbose")


@pytest.mark.parametrize("empty", ["", " "])
def test_an_empty_kept_answers_folder_is_refused_never_read_as_the_working_folder(
    monkeypatch, tmp_path, empty
):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("FMA_BANDS_KEPT_ANSWERS", empty)
    with pytest.raises(FmaBandsError, match=r"setting kept_answers .*is empty") as refused:
        load_settings()
    assert refused.value.field == "kept_answers"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("given", ["0", "1441", "-5", "five", "5.5", "", "٥"])
def test_idle_minutes_are_a_whole_number_from_1_to_a_day_or_refused_by_name(monkeypatch, given):
    monkeypatch.setenv(PREFIX + "IDLE_MINUTES", given)
    with pytest.raises(FmaBandsError, match=r"setting idle_minutes \(FMA_BANDS_IDLE_MINUTES\)"):
        load_settings()


@pytest.mark.parametrize("given", ["1", " 30 ", "1440"])
def test_idle_minutes_within_a_day_are_read(monkeypatch, given):
    monkeypatch.setenv(PREFIX + "IDLE_MINUTES", given)
    assert load_settings().idle_minutes == int(given)


def test_a_variable_is_read_whatever_its_case_and_an_option_wins_over_it(monkeypatch, tmp_path):
    monkeypatch.setenv(PREFIX.lower() + "vignettes", str(tmp_path / "mine"))
    monkeypatch.setenv(PREFIX + "LOG_LEVEL", "warning")
    assert load_settings().vignettes == tmp_path / "mine"
    found = load_settings(vignettes=str(tmp_path / "given"), log_level=None)
    assert (found.vignettes, found.log_level) == (tmp_path / "given", "WARNING")
