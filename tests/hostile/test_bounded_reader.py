"""The one bounded reader (fma_bands.core.files): YAML with the YAML 1.2 core meanings and no
tags, JSON without a key given twice, and neither a control character nor an integer Python
refuses to convert; each refusal names the file, the line and the field."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fma_bands.core.errors import FmaBandsError
from fma_bands.core.files import (
    MAX_DEPTH,
    _brackets,
    decode_text,
    load_json,
    load_yaml,
    read_json,
    read_yaml,
)

BIG = "9" * 5000


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "a: [yes, no, on, off, y, n, Yes, OFF]",
            ["yes", "no", "on", "off", "y", "n", "Yes", "OFF"],
        ),
        ("a: [true, True, FALSE]", [True, True, False]),
        ("a: 1:0", "1:0"),  # YAML 1.1 read this as 60
        ("a: 1:30:00.5", "1:30:00.5"),
        ("a: [010, 0o10, 0x1F, -7, +3]", [10, 8, 31, -7, 3]),  # 010 is ten, not octal eight
        ("a: 1_000", "1_000"),
        ("a: 2001-01-01", "2001-01-01"),  # no timestamps
        ("a: [1.5, 1e3, .inf]", [1.5, 1000.0, float("inf")]),
        ("a: [~, null, ]", [None, None]),
        ("a: '<<'", "<<"),
    ],
)
def test_yaml_has_the_yaml_1_2_core_meanings(text, expected):
    assert load_yaml(text, source="f.yaml") == {"a": expected}


@pytest.mark.parametrize(
    "text",
    [
        "a: !!set {1: null}",
        "a: !!binary aGVsbG8=",
        "a: !!str plain",
        "a: !!int '3'",
        "a: !custom x",
        "a: ! x",
        "a:\n  - !!omap [{b: 1}]",
    ],
)
def test_an_explicit_tag_is_refused_with_file_and_line(text):
    with pytest.raises(FmaBandsError) as refused:
        load_yaml(text, source="f.yaml")
    assert "tag" in refused.value.message and "not accepted" in refused.value.message
    assert refused.value.file == "f.yaml" and refused.value.line == text.count("\n") + 1


@pytest.mark.parametrize(
    ("text", "line", "field", "fragment"),
    [
        ('id: x\nclinical_core: "before\\0after"\n', 2, "clinical_core", "NUL byte"),
        ('id: x\nlist:\n  - ok\n  - "bell\\a"\n', 4, "list.1", "U+0007"),
        ('id: x\nm: {"key\\x1b": 1}\n', 2, "m", "a key here holds the control character U+001B"),
        ('id: x\nc1: "\\x85"\n', 2, "c1", "U+0085"),
        # Text that reads in another order than it is stored ("Trojan Source").
        (
            'id: x\nclinical_core: "give \u202e01 gm"\n',
            2,
            "clinical_core",
            "direction control U+202E",
        ),
        (f"id: x\nn:\n  deep: {BIG}\n", 3, "n.deep", "5,000 digits"),
        (f"id: x\nn: -{BIG}\n", 2, "n", "5,000 digits"),
        # Short as text, longer than Python shows once read: 4,000 hex digits are 4,817.
        (f"id: x\nn: 0x{'f' * 4000}\n", 2, "n", "about 4,817 digits"),
    ],
)
def test_a_control_character_or_huge_integer_is_refused_by_file_line_and_field(
    text, line, field, fragment
):
    with pytest.raises(FmaBandsError) as refused:
        load_yaml(text, source="f.yaml")
    assert (refused.value.file, refused.value.line, refused.value.field) == ("f.yaml", line, field)
    assert fragment in refused.value.message


def test_tab_newline_and_carriage_return_are_text():
    found = load_yaml('a: "one\\ttwo\\r\\nthree"\nb: |\n  x\n  y\n', source="f.yaml")
    assert found == {"a": "one\ttwo\r\nthree", "b": "x\ny\n"}


def test_a_huge_integer_in_a_yaml_file_is_named_not_a_crash(tmp_path):
    path = tmp_path / "f.yaml"
    path.write_text(f"quorum: {BIG}\n")
    with pytest.raises(FmaBandsError) as refused:
        read_yaml(path, limit=64 * 1024)
    assert str(refused.value).startswith(f"{path}:1: quorum: holds a number of 5,000 digits")


@pytest.mark.parametrize(
    ("text", "field", "line", "fragment"),
    [
        ('{"min": 1, "min": 3}', "min", None, "gives the key 'min' twice"),
        ('{"a": {"b": 1, "c": 2, "b": 2}}', "b", None, "gives the key 'b' twice"),
        ('{\n"a":\n' + BIG + "}", None, 3, "more than 4,300 digits"),
        ('{"a": ["ok", "x\\u0000y"]}', "a.1", None, "NUL byte"),
        ('{"a\\u0000": 1}', None, None, "NUL byte"),
    ],
)
def test_json_refuses_a_key_given_twice_a_huge_integer_and_a_nul(text, field, line, fragment):
    with pytest.raises(FmaBandsError) as refused:
        load_json(text, source="f.json")
    assert (refused.value.file, refused.value.field, refused.value.line) == ("f.json", field, line)
    assert fragment in refused.value.message


def test_an_escaped_backslash_before_u0000_is_not_a_nul():
    assert load_json('{"a": "\\\\u0000"}', source="f.json") == {"a": "\\u0000"}


def test_a_huge_integer_in_a_json_file_is_named(tmp_path):
    path = tmp_path / "runs.json"
    path.write_text('{"runs": [' + BIG + "]}")
    with pytest.raises(FmaBandsError, match="more than 4,300 digits") as refused:
        read_json(path, limit=1024 * 1024)
    assert refused.value.file == str(path) and refused.value.line == 1


@pytest.mark.parametrize(
    "data",
    [b"\xff\xfe" + "a: 1\n".encode("utf-16-le"), b"\xfe\xff" + "a: 1\n".encode("utf-16-be")],
)
def test_utf16_is_named_as_such(data):
    with pytest.raises(FmaBandsError, match="UTF-16 or UTF-32 text") as refused:
        decode_text(data, what="file", file="f.yaml")
    assert refused.value.line == 1


def test_a_utf8_byte_order_mark_is_dropped():
    assert decode_text(b"\xef\xbb\xbfline one\n", what="file") == "line one\n"


def nested_json(depth: int, inner: str = "1") -> str:
    text = inner
    for level in range(depth):
        text = f'{{"k{level}": {text}}}' if level % 2 else f"[{text}]"
    return text


@pytest.mark.parametrize("inner", ["1", '"say \\"hi\\" [[[["', '"[[[[{{{{ é"'])
def test_json_nested_to_the_limit_reads_and_one_level_more_is_refused(inner):
    """Brackets inside strings are no nesting, with or without an escaped quote beside them
    (two ways of measuring the depth, both checked)."""
    assert load_json(nested_json(MAX_DEPTH, inner), source="f.json") is not None
    assert load_json(nested_json(MAX_DEPTH, inner), source="f.json", shared=True) is not None
    for shared in (False, True):
        with pytest.raises(FmaBandsError, match="nested more than 32 levels deep"):
            load_json(nested_json(MAX_DEPTH + 1, inner), source="f.json", shared=shared)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from('"[]{}:,a \\é\U0001f600\ud800\udc00'), max_size=60))
def test_the_brackets_outside_strings_are_found_in_any_text(text):
    """The brackets that measure nesting are those outside the strings, in order, whatever
    the text holds: characters beyond ASCII, and surrogates no file can hold."""
    expected = None
    if '\\"' not in text:
        kept = "".join(c for c in text if not c.isascii() or c in '"[]{}')
        expected = "".join(kept.split('"')[::2])
    assert _brackets(text) == expected


def test_shared_json_gives_equal_small_objects_and_short_strings_once():
    first = load_json('{"a": {"choice": "yes"}, "b": "sha256:00ff"}', source="one", shared=True)
    second = load_json('[{"choice": "yes"}, {"choice": "no"}]', source="two", shared=True)
    assert first["a"] is second[0] and second[1] == {"choice": "no"}
    # A true, a 1 and a 1.0 are three values, never one shared object.
    kinds = load_json('[{"x": true}, {"x": 1}, {"x": 1.0}]', source="three", shared=True)
    assert [type(o["x"]) for o in kinds] == [bool, int, float]
    # An object of many members is the caller's own, its short strings shared.
    many = '{"sha": "sha256:00ff", ' + ", ".join(f'"m{i}": {i}' for i in range(9)) + "}"
    one, two = (load_json(many, source="big", shared=True) for _ in range(2))
    assert one == two and one is not two and one["sha"] is two["sha"]
    # Read without sharing, nothing is shared.
    assert load_json('{"choice": "yes"}', source="four") is not first["a"]


def test_shared_json_still_refuses_a_key_given_twice():
    with pytest.raises(FmaBandsError, match="gives the key 'min' twice"):
        load_json('{"a": {"min": 1, "min": 3}}', source="f.json", shared=True)


def test_shared_json_keeps_no_long_text_for_sharing():
    """What the sharing table holds outlives the document: only short texts go in it, so a
    file of many small objects holding long strings leaves nothing large behind."""
    long = "x" * 1000
    text = "[" + ", ".join(f'{{"n": {i}, "t": "{long}"}}' for i in range(50)) + "]"
    first, second = (load_json(text, source="f.json", shared=True) for _ in range(2))
    assert first == second and all(a is not b for a, b in zip(first, second, strict=True))
    keyed = '{"' + "k" * 100 + '": 1}'
    assert load_json(keyed, source="g", shared=True) is not load_json(
        keyed, source="g", shared=True
    )


def test_json_with_a_lone_surrogate_is_refused_by_name_and_a_pair_is_one_character():
    for shared in (False, True):
        assert load_json('{"a": "\\ud83d\\ude00"}', source="f.json", shared=shared) == {
            "a": "\U0001f600"
        }
        for text, field in (
            ('{"a": ["ok", "x\\uDBFF"]}', "a.1"),
            ('{"\\udc00": 1}', None),
            ('"\\ude00\\ud83d"', None),  # a pair in the wrong order is two lone ones
        ):
            with pytest.raises(FmaBandsError, match="lone surrogate") as refused:
                load_json(text, source="f.json", shared=shared)
            assert refused.value.field == field and refused.value.file == "f.json"
    # An escaped backslash before "ud800" is text, not an escape.
    assert load_json('"\\\\ud800"', source="f.json") == "\\ud800"
