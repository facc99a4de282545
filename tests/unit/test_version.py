import importlib.metadata

import pytest

from compat import UnsupportedVersionError, VersionError, resolve
from compat import version as v
from compat.errors import NewerVersionWarning


@pytest.mark.parametrize("text, release, how", [
    ("0.16.1", "0.16.1", "exact"),
    ("0.16.1+cu130.abc", "0.16.1", "local"),
    ("0.19.0rc3", "0.19.0", "base"),
    ("0.16.0rc0.dev132713", "0.16.0", "base"),
    ("0.15.0.post1", "0.15.0", "base"),
    ("0.12.4", "0.12.3", "older-base"),
    ("0.20.0rc1", "0.19.2", "newer"),
    ("1.0.0", "0.19.2", "newer"),
])
def test_match_release(text, release, how):
    assert v.match_release(text, registry_versions()) == (release, how)


def registry_versions():
    from compat.registry import registry
    return registry().versions()


def test_string_comparison_bug_is_not_ours():
    # verl compared `__version__ >= "0.16.0"` as strings: "0.9.0" >= "0.16.0" is True lexicographically.
    assert "0.9.0" >= "0.16.0"
    assert not v.at_least("0.9.0", "0.16.0")
    assert v.sorted_versions(["0.9.0", "0.16.0", "0.10.0"]) == ["0.9.0", "0.10.0", "0.16.0"]


@pytest.mark.parametrize("text", ["abc", "0.x", "", "latest"])
def test_unparseable_version(text):
    with pytest.raises(VersionError, match="does not parse"):
        v.parse(text)


@pytest.mark.parametrize("text", ["0.6.0", "0.4.0", "0.1.0"])
def test_older_than_0_7_is_unsupported(text):
    with pytest.raises(UnsupportedVersionError, match="0.7.0"):
        resolve({}, None, text)


def test_newer_than_registry_warns_and_points_at_the_gate():
    with pytest.warns(NewerVersionWarning, match="python -m compat gate"):
        res = resolve({"overlap_grad_reduce": True}, None, "0.21.0")
    assert res.version == "0.19.2" and res.kwargs == {"overlap_grad_reduce": True}


def test_filename_versions():
    assert v.version_from_filename("megatron_core-0.19.2-cp312-cp312-manylinux_2_28_x86_64.whl") == "0.19.2"
    assert v.version_from_filename("megatron_core-0.16.0rc0.dev1.tar.gz") == "0.16.0rc0.dev1"
    assert v.version_from_filename("torch-2.13.0-cp311.whl") is None


def test_installed_version_from_a_source_tree(tmp_path, monkeypatch):
    info = tmp_path / "megatron" / "core" / "package_info.py"
    info.parent.mkdir(parents=True)
    info.write_text("MAJOR = 0\nMINOR = 19\nPATCH = 0\nPRE_RELEASE = 'rc0'\nVERSION = (MAJOR, MINOR, PATCH)\n")
    monkeypatch.setattr(importlib.metadata, "version", _not_found)
    monkeypatch.delitem(v.sys.modules, "megatron.core.package_info", raising=False)  # imported by other tests
    monkeypatch.syspath_prepend(str(tmp_path))
    assert v.installed_version() == "0.19.0rc0"


def _not_found(_name):
    raise importlib.metadata.PackageNotFoundError(_name)
