"""tools/matrix.py: matrix.yaml validation (table-driven) and add_pin's textual edit."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml")

ROOT = Path(__file__).resolve().parents[2]

from tools import matrix as M  # noqa: E402

REGISTRY = M.load_registry(M.DEFAULT_REGISTRY)


def entry(**over) -> dict:
    base = {"version": "0.16.1", "python": "3.11", "torch": "2.13.0+cpu", "no_deps": False,
            "ignore_requires_python": False, "extra": [], "tags": [], "note": "plain install"}
    base.update(over)
    return {k: v for k, v in base.items() if v is not DROP}


DROP = object()


def doc(*entries, **top) -> str:
    return yaml.safe_dump({"pins": list(entries), **top}, sort_keys=False)


def load(text: str):
    return M.parse_matrix_text(text, registry=REGISTRY, path="m.yaml")


BAD = [
    # id, text, error class, phrase in the message
    ("unknown-key", doc(entry(recipe="x")), M.UnknownKeyError, "key 'recipe': unknown key"),
    ("unknown-top-key", doc(entry(), defaults={}), M.UnknownKeyError, "unknown top-level key"),
    ("missing-python", doc(entry(python=DROP)), M.MissingKeyError, "key 'python': is required"),
    ("missing-torch", doc(entry(torch=DROP)), M.MissingKeyError, "key 'torch': is required"),
    ("missing-version", doc(entry(version=DROP)), M.MissingKeyError, "pin #1: key 'version'"),
    ("empty-torch", doc(entry(torch="")), M.MissingKeyError, "key 'torch'"),
    ("not-in-registry", doc(entry(version="0.16.2")), M.UnknownVersionError, "not a megatron-core release"),
    ("pre-registry", doc(entry(version="0.6.9")), M.UnknownVersionError, "0.6.9"),
    ("unparseable", doc(entry(version="latest")), M.UnknownVersionError, "does not parse"),
    ("yanked", doc(entry(version="0.18.1")), M.YankedVersionError, "0.18.1 is yanked"),
    ("yanked-2", doc(entry(version="0.19.1")), M.YankedVersionError, "yanked"),
    ("float-version", "pins:\n  - {version: 0.10, python: '3.11', torch: 2.13.0+cpu}\n",
     M.RecipeError, "must be a quoted string"),
    ("float-python", "pins:\n  - {version: '0.16.1', python: 3.10, torch: 2.13.0+cpu}\n",
     M.RecipeError, "YAML reads 0.10 or 3.10 as a float"),
    ("bad-python", doc(entry(python="py3")), M.RecipeError, "not a Python series"),
    ("torch-range", doc(entry(torch=">=2.6")), M.RecipeError, "key 'torch'"),
    ("torch-no-local", doc(entry(torch="2.13.0")), M.RecipeError, "CUDA build"),
    ("torch-short", doc(entry(torch="2.13+cpu")), M.RecipeError, "one exact version"),
    ("irp-without-no-deps", doc(entry(version="0.17.1", ignore_requires_python=True, note="x")),
     M.RecipeError, "ignore_requires_python needs no_deps: true"),
    ("no-deps-not-bool", doc(entry(no_deps="yes")), M.RecipeError, "key 'no_deps': must be true or false"),
    ("extra-not-list", doc(entry(extra="numpy", note="x")), M.RecipeError, "key 'extra': must be a list"),
    ("extra-unknown-type", doc(entry(extra=[{"numpy": ">=1"}], note="x")), M.RecipeError, "unknown extra type dict"),
    ("extra-int", doc(entry(extra=[3], note="x")), M.RecipeError, "unknown extra type int"),
    ("extra-not-pep508", doc(entry(extra=["numpy >>= 1"], note="x")), M.RecipeError, "not a PEP 508"),
    ("extra-torch", doc(entry(extra=["torch"], note="x")), M.RecipeError, "come from the torch and version"),
    ("extra-twice", doc(entry(extra=["numpy", "NumPy<2"], note="x")), M.RecipeError, "listed twice"),
    ("reserved-tag", doc(entry(tags=["newest"])), M.RecipeError, "derived automatically"),
    ("reserved-mcore-tag", doc(entry(tags=["mcore-0.16.1"])), M.RecipeError, "derived automatically"),
    ("bad-tag", doc(entry(tags=["Has Space"])), M.RecipeError, "is not a tag"),
    ("deviation-without-note", doc(entry(no_deps=True, note="")), M.RecipeError, "needs a note"),
    ("multiline-note", doc(entry(note="a\nb")), M.RecipeError, "one line"),
    ("duplicate-version", doc(entry(), entry()), M.DuplicatePinError, "pinned twice"),
    ("same-series", doc(entry(version="0.16.0"), entry()), M.DuplicatePinError, "one pin per minor series"),
    ("duplicate-yaml-key", "pins:\n  - version: '0.16.1'\n    python: '3.11'\n    python: '3.12'\n"
     "    torch: 2.13.0+cpu\n", M.MatrixSyntaxError, "m.yaml: key 'python': duplicate key 'python' (lines 3 and 4)"),
    ("not-yaml", "pins: [\n", M.MatrixSyntaxError, "not valid YAML"),
    ("no-pins", "pins: []\n", M.MatrixSyntaxError, "non-empty list"),
    ("top-is-list", "- 1\n", M.MatrixSyntaxError, "top level"),
    ("entry-not-mapping", "pins: ['0.16.1']\n", M.MatrixSyntaxError, "pin #1: must be a mapping"),
]


@pytest.mark.parametrize(("text", "error", "phrase"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_matrix_raises(text, error, phrase):
    with pytest.raises(error) as info:
        load(text)
    assert phrase in str(info.value)
    assert isinstance(info.value, M.MatrixError) and isinstance(info.value, ValueError)
    assert str(info.value).startswith("m.yaml")


def test_error_names_the_entry_and_key():
    with pytest.raises(M.RecipeError) as info:
        load(doc(entry(version="0.15.3"), entry(version="0.17.1", ignore_requires_python=True, note="x")))
    assert info.value.entry == "0.17.1 (#2)"
    assert info.value.key == "ignore_requires_python"
    assert "pin 0.17.1 (#2): key 'ignore_requires_python'" in str(info.value)


def test_minimal_entry_defaults():
    [pin] = load(doc(entry(no_deps=DROP, ignore_requires_python=DROP, extra=DROP, tags=DROP, note=DROP)))
    assert (pin.no_deps, pin.ignore_requires_python, pin.extra, pin.tags, pin.note) == (False, False, (), (), "")
    assert pin.plain and pin.torch_requirement == "torch==2.13.0+cpu"
    assert pin.megatron_requirement == "megatron-core==0.16.1"
    assert pin.all_tags() == ["cpu", "py311", "mcore-0.16.1", "oldest", "newest"]


def test_ordering_and_derived_tags_use_packaging_versions():
    # 0.9.0 < 0.10.0 numerically; a string sort would put 0.10.0 first
    pins = load(doc(entry(version="0.10.0"), entry(version="0.9.0"), entry(version="0.12.3")))
    assert [p.version for p in pins] == ["0.9.0", "0.10.0", "0.12.3"]
    assert "oldest" in pins[0].derived_tags and "newest" in pins[-1].derived_tags
    assert "oldest" not in pins[1].derived_tags and "newest" not in pins[1].derived_tags
    assert pins[1].all_tags(kind="gpu")[0] == "gpu"


def test_real_matrix_loads():
    pins = M.load_matrix()
    assert len(pins) == 13
    assert pins[0].version == "0.7.0" and "oldest" in pins[0].derived_tags
    assert pins[-1].version == "0.19.2" and "newest" in pins[-1].derived_tags
    versions = [p.version for p in pins]
    assert versions == M.sorted_versions(versions)
    for pin in pins:
        assert not REGISTRY[pin.version]["yanked"]
        assert pin.torch_requirement == "torch==2.13.0+cpu"
        assert pin.note, pin.version
    by = {p.version: p for p in pins}
    assert all(by[v].ignore_requires_python and by[v].no_deps for v in ("0.17.1", "0.18.2", "0.19.2"))
    assert all("triton" in by[v].extra for v in ("0.18.2", "0.19.2"))
    assert all("setuptools<81" in by[v].extra for v in ("0.7.0", "0.8.0"))
    assert all(by[v].no_deps and not by[v].ignore_requires_python for v in ("0.10.0", "0.11.0", "0.12.3"))


def test_real_matrix_pins_newest_patch_of_each_series():
    pins = M.load_matrix()
    releases = [v for v, r in REGISTRY.items() if not r["yanked"] and M.parse(v) >= M.parse("0.7.0")]
    newest_per_series = {}
    for v in M.sorted_versions(releases):
        newest_per_series[M.parse(v).release[:2]] = v
    assert sorted(p.version for p in pins) == sorted(newest_per_series.values())


# ---------------------------------------------------------------------------------------- add_pin
MATRIX_TEXT = textwrap.dedent("""\
    # top comment stays
    pins:
      # a comment about 0.15
      - version: "0.15.3"
        python: "3.11"
        torch: "2.13.0+cpu"
        note: "plain install"

      # the newest
      - version: "0.16.0"
        python: "3.11"
        torch: "2.13.0+cpu"
        extra: [numpy]
        note: "needs numpy"  # trailing comment
    """)


@pytest.fixture
def matrix_file(tmp_path):
    path = tmp_path / "matrix.yaml"
    path.write_text(MATRIX_TEXT)
    return path


def test_add_pin_appends_a_new_series_keeping_comments(matrix_file):
    assert M.add_pin("0.17.1", path=matrix_file, no_deps=True, ignore_requires_python=True,
                     extra=["numpy", "packaging"], note="py>=3.12 metadata") == "appended"
    text = matrix_file.read_text()
    assert text.startswith(MATRIX_TEXT.rstrip("\n") + "\n\n")
    pins = M.load_matrix(matrix_file)
    assert [p.version for p in pins] == ["0.15.3", "0.16.0", "0.17.1"]
    assert pins[-1].ignore_requires_python and pins[-1].extra == ("numpy", "packaging")
    assert "newest" in pins[-1].derived_tags


def test_add_pin_copies_the_newest_recipe_by_default(matrix_file):
    M.add_pin("0.17.1", path=matrix_file, no_deps=True, ignore_requires_python=True, note="x")
    M.add_pin("0.18.2", path=matrix_file)
    new = M.load_matrix(matrix_file)[-1]
    assert new.version == "0.18.2" and new.no_deps and new.ignore_requires_python
    assert new.note.startswith("recipe copied from 0.17.1")


def test_add_pin_bumps_a_patch_in_place(matrix_file):
    assert M.add_pin("0.16.1", path=matrix_file) == "replaced 0.16.0"
    text = matrix_file.read_text()
    assert "# the newest\n  - version: \"0.16.1\"" in text
    assert "# a comment about 0.15" in text and "0.16.0" not in text
    pins = M.load_matrix(matrix_file)
    assert [p.version for p in pins] == ["0.15.3", "0.16.1"]
    assert pins[-1].extra == ("numpy",) and pins[-1].note == "needs numpy"


def test_add_pin_bump_in_the_middle_keeps_following_pins(tmp_path):
    path = tmp_path / "matrix.yaml"
    path.write_text(MATRIX_TEXT.replace('"0.15.3"', '"0.15.0"').replace('"0.16.0"', '"0.16.1"'))
    assert M.add_pin("0.15.2", path=path) == "replaced 0.15.0"
    text = path.read_text()
    assert "\n\n  # the newest\n  - version: \"0.16.1\"" in text
    assert [p.version for p in M.load_matrix(path)] == ["0.15.2", "0.16.1"]
    with pytest.raises(M.DuplicatePinError, match="already pinned"):
        M.add_pin("0.15.2", path=path)


@pytest.mark.parametrize(("version", "kwargs", "error", "phrase"), [
    ("0.16.1", {"replace_series": False}, M.DuplicatePinError, "already pins the 0.16 series"),
    ("0.18.1", {}, M.YankedVersionError, "yanked"),
    ("0.99.0", {}, M.UnknownVersionError, "not a megatron-core release"),
    ("0.17.1", {"ignore_requires_python": True, "no_deps": False, "note": "x"}, M.RecipeError,
     "needs no_deps"),
    ("0.17.1", {"extra": [1]}, M.RecipeError, "unknown extra type"),
])
def test_add_pin_refuses_and_leaves_the_file_alone(matrix_file, version, kwargs, error, phrase):
    with pytest.raises(error, match=phrase):
        M.add_pin(version, path=matrix_file, **kwargs)
    assert matrix_file.read_text() == MATRIX_TEXT


def test_add_pin_refuses_an_older_patch(tmp_path):
    path = tmp_path / "matrix.yaml"
    path.write_text(MATRIX_TEXT.replace('"0.16.0"', '"0.16.1"'))
    with pytest.raises(M.DuplicatePinError, match="older than the pinned 0.16.1"):
        M.add_pin("0.16.0", path=path)
