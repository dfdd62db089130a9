"""yaml_writer writes what plain yaml.dump writes, byte for byte, on any data bands.yaml can hold,
and leaves everything else (and every failure) to yaml.dump itself."""

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from yaml.representer import RepresenterError

from fma_bands.core.files import control_character, load_yaml
from fma_bands.evidence import yaml_writer
from fma_bands.evidence.export import dump_bands

# Texts the resolver or the emitter treats specially: each must keep yaml.dump's tag and quoting.
AWKWARD = [
    *("yes", "No", "on", "OFF", "y", "n", "null", "Null", "~", "", "true", "False", "TRUE"),
    *("1", "-1", "+1", "01", "1.0", "1e3", "1_000", "0x1", "0o7", "0b1", ".inf", "-.Inf", ".nan"),
    *("12:30", "1:2:3", "2026-01-01", "2026-01-01T10:00:00Z", "<<", "=", "-", "?", ":", "#"),
    *(" lead", "trail ", "a: b", "a #b", "- x", "[x]", "{x}", "!tag", "&a", "*a", "|", ">"),
    *("%YAML", "@x", "`x", "'", '"', "---", "...", "\n", "a\nb", " \n", "\n ", "a\n\nb\n"),
    *("é", "\x00", "\x07", "\t", "\r", "\x85", "\u2028", "\ufeff", "\U0001f600", "\ud800"),
]
texts = st.one_of(
    st.sampled_from(AWKWARD),
    st.text(max_size=60),
    st.text(alphabet=" \n\tab:#é-\u2028\x85\U0001f600'\"?&*!|>%@`{}[],.0x1", max_size=60),
    # Long enough for the emitter to fold at width 100.
    st.lists(st.sampled_from([*AWKWARD, "word", "words"]), max_size=40).map(" ".join),
)
scalars = st.one_of(st.none(), st.booleans(), st.integers(), texts)
plain_data = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(scalars, inner, max_size=4),
    max_leaves=30,
)


def plain_dump(data, dumper=yaml_writer.SafeDumper) -> str:
    return yaml.dump(data, Dumper=dumper, sort_keys=False, allow_unicode=True, width=100)


def walk(data):
    """Every key and value inside data, keys first as yaml.dump meets them."""
    yield data
    if isinstance(data, dict):
        for key, value in data.items():
            yield from walk(key)
            yield from walk(value)
    elif isinstance(data, list | tuple):
        for value in data:
            yield from walk(value)


def before(data) -> str:
    """bands.yaml as it was written before yaml_writer: yaml.dump, by libyaml's emitter unless
    PyYAML's own would write one of the strings differently."""
    strings = (value for value in walk(data) if isinstance(value, str))
    return plain_dump(data, yaml_writer.emitter_for(strings))


def empty_key(data) -> bool:
    # libyaml writes `'': null` where PyYAML writes `? ''` then `: null`, and always did here.
    return any(isinstance(v, dict) and "" in v for v in walk(data))


DUMPERS = [
    yaml.SafeDumper,
    yaml_writer.SafeDumper,
    *([yaml.CSafeDumper, yaml_writer.C_SAFE_DUMPER] if hasattr(yaml, "CSafeDumper") else []),
]


def outcome(write, data):
    """The text written, or the error raised, as (type, message): a RecursionError by its type
    only, as its message names whichever call went too deep."""
    try:
        return write(data)
    except RecursionError:
        return RecursionError
    except Exception as exc:
        return type(exc), str(exc)


def each_emitter_alike(data):
    for dumper in DUMPERS:
        fast = outcome(lambda d, dumper=dumper: yaml_writer.dump(d, width=100, dumper=dumper), data)
        assert fast == outcome(lambda d, dumper=dumper: plain_dump(d, dumper), data)


@settings(max_examples=500, deadline=None)
@given(plain_data, plain_data)
def test_any_plain_data_is_written_as_yaml_dump_writes_it(data, more):
    # As bands.yaml was written, and as PyYAML's own emitter writes it; each emitter by itself
    # too (libyaml refuses a lone surrogate, as it does under yaml.dump).
    document = {"x": data, "bands": {"v": [{"notes": more}, []], "w": {}}}
    assert dump_bands(document) == before(document)
    if not empty_key(document):
        assert dump_bands(document) == plain_dump(document)
    each_emitter_alike(data)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(AWKWARD), min_size=1, max_size=8), st.integers(0, 6))
def test_repeated_scalars_keep_their_own_tags(words, n):
    # One event per distinct scalar: True, 1 and '1' (equal or alike) must not share one.
    document = {
        "x": [*words, True, 1, "1", False, 0, "0", None, "null", n, str(n), *words],
        "y": {word: word for word in words},
    }
    assert dump_bands(document) == before(document)
    each_emitter_alike(document)


@pytest.mark.skipif(not hasattr(yaml, "CSafeDumper"), reason="PyYAML built without libyaml")
def test_an_empty_key_is_written_as_libyaml_writes_it_as_before():
    assert dump_bands({"": None}) == "'': null\n" == before({"": None})
    assert plain_dump({"": None}) == "? ''\n: null\n"


class Text(str):
    pass


def test_what_the_walk_leaves_to_yaml_dump_is_written_as_yaml_dump_writes_it():
    shared, empty = ["a", {"b": 1}], {}
    deep = nested(yaml_writer.MAX_DEPTH + 5)
    for data in (
        {"one": shared, "two": shared, "e": empty, "f": [empty]},  # anchors and aliases
        {"t": ("a", 1), (1, 2): "tuple key", "f": [1.5, 1e17, float("nan")]},
        {"tab\t": shared, "again": shared},
        {"deep": deep},
    ):
        assert dump_bands(data) == before(data) == plain_dump(data)
        each_emitter_alike(data)


def nested(depth: int) -> list:
    data: list = []
    for _ in range(depth):
        data = [data]
    return data


def test_what_yaml_dump_refuses_it_still_refuses():
    for data in (
        *({"x": object()}, {"x": Text("yes")}, {"x": [1, {2, 3}]}, {"x": b"\xff", "y": "ok"}),
        # yaml.dump takes two calls a level, too many here; a walk of one a level would not.
        *({"x": nested(600)}, {"x": nested(5000)}),
    ):
        assert outcome(dump_bands, data) == outcome(before, data)
    assert outcome(dump_bands, {"x": Text("a str of another type")})[0] is RepresenterError
    assert outcome(dump_bands, {"x": nested(600)}) is RecursionError


def test_every_text_reads_back_as_text_with_fma_bands_reader_and_the_harness_reader():
    """Quoted where YAML 1.2 (fma-bands' reader) and YAML 1.1 (PyYAML, the harness) disagree:
    `1e3` and `0o7` are text to one and numbers to the other."""
    texts = [t for t in AWKWARD if not control_character(t) and t not in ("\ud800", "\ufeff")]
    document = {"bands": {t: [t] for t in texts}}
    written = dump_bands(document)
    assert "'1e3'" in written and "'0o7'" in written
    assert load_yaml(written, source="bands.yaml") == document
    assert yaml.safe_load(written) == document


@pytest.mark.skipif(yaml_writer.C_SAFE_DUMPER is None, reason="PyYAML without libyaml")
@pytest.mark.parametrize(
    ("text", "pure_python"),
    [
        ("plain words", False),
        ("two\nlines", False),
        ("ends with a space ", False),
        ("é and ✓", False),
        ("a tab\there", True),
        ("a bell \x07", True),
        ("next line \x85", True),
        ("\ufeffbom", True),
        ("beyond \U0001f600", True),
        ("space then break \nx", True),
        ("break then\n space", True),
        ("x \u2028y", True),
        ("x\u2028 y", True),
        ("x \u2029y", True),
        ("x\u2029 y", True),
    ],
)
def test_the_emitter_is_chosen_by_each_string_pyyaml_writes_its_own_way(text, pure_python):
    chosen = yaml_writer.emitter_for(iter(["ok", text]))
    assert chosen is (yaml_writer.SafeDumper if pure_python else yaml_writer.C_SAFE_DUMPER)


def test_a_band_on_one_line_as_bands_yaml_writes_it():
    from fma_bands.core.bands import parse_band
    from fma_bands.evidence.yaml_writer import harness_line

    assert harness_line(parse_band("followup_days", {"min": 1, "max": 14})) == (
        "acceptable: {min: 1, max: 14}"
    )
    assert harness_line(parse_band("admit", [True])) == "acceptable: [true]"
    orders = parse_band("orders", {"required": ["cbc"], "defensible": ["cbc", "lft"]})
    assert harness_line(orders) == "acceptable: [cbc, lft]; x_required: [cbc]"
