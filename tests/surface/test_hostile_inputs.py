"""The surface gate on hostile candidates: lookups visit each module and class once (star-import DAGs,
class lattices, chains thousands long), a call is checked in time linear in its keywords, what the model parses
and how deep a member path goes is bounded, ``__all__.append/.extend`` are read, and the model cache trusts only
entries made with this account's key. In process on the model, and through the real CLI in a subprocess (exit code,
one stderr line, no traceback, peak memory; the JSON report in process); the time of each case is a figure in
``benchmarks/results/surface_hostile.json``, not an assert here."""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from compat import CandidateError
from compat.tooling.archive import open_source
from compat.tooling.gate.surface import cache as surface_cache
from compat.tooling.gate.surface import check as c
from compat.tooling.gate.surface.cache import release_models
from compat.tooling.gate.surface.lookup import OPAQUE, Surface
from compat.tooling.gate.surface.model import MAX_PATH_DEPTH, build_model
from compat.tooling.gate.surface.release_gate import surface_gate
from compat.tooling.pysource import SourceBudget
from tests.unit import hostile_inputs as H

from . import hostile_candidates as S

MAX_RSS_MIB = 500


def _surface(tmp: Path, files: dict) -> Surface:
    return Surface(build_model(open_source(S.wheel(tmp / "w", files))))


def _wheel_files(builder, tmp: Path) -> Path:
    """The candidate wheel a hostile builder wrote."""
    return Path(builder(tmp)["args"][1])


# ---- lookups: each module and class once per query -----------------------------------------------------------------
def test_a_star_import_dag_is_walked_once_per_module(tmp_path):
    s = Surface(build_model(open_source(_wheel_files(lambda t: S.star_dag(t, 40), tmp_path))))
    assert not s.resolve("megatron.core.dag.l0a.absent").ok
    assert s.resolve("megatron.core.dag.l0a.present").ok  # found at the bottom, 40 layers down
    lookups = [k for k in s._memo if k[0] == "mm" and k[2] in ("absent", "present")]
    assert len(lookups) <= 2 * (2 * 40)  # one per module and name, not one per path (2**40)


def test_a_class_lattice_is_walked_once_per_class(tmp_path):
    s = Surface(build_model(open_source(_wheel_files(lambda t: S.class_lattice(t, 30), tmp_path))))
    res = s.resolve("megatron.core.lattice.C0a.absent")
    assert not res.ok and res.container.name == "megatron.core.lattice.C0a"
    assert s.resolve("megatron.core.lattice.C0a.top").ok
    assert len(s.mro("megatron.core.lattice.C0a")) == 1 + 2 * 30  # C0a and both classes of each level above
    assert not s.is_enum("megatron.core.lattice.C0a")
    assert len([k for k in s._memo if k[0] == "cm" and k[2] == "absent"]) == 1 + 2 * 30


@pytest.fixture(scope="module")
def chain_model(tmp_path_factory):
    """The model of a chain builder's wheel (3,000 modules or classes), built once for the tests below that query
    it; each test makes its own Surface (its own memo), as before."""
    models: dict = {}

    def model(builder) -> dict:
        if builder not in models:
            wheel = _wheel_files(builder, tmp_path_factory.mktemp(builder.__name__))
            models[builder] = build_model(open_source(wheel))
        return models[builder]
    return model


@pytest.mark.parametrize("builder, use, ok", [
    (S.reexport_chain, "megatron.core.chain.m0.X", True),
    (S.star_chain, "megatron.core.stars.s0.deep", True),
    (S.star_chain, "megatron.core.stars.s0.shallow", False),
    (S.class_chain, "megatron.core.kchain.K0.root", True),
    (S.class_chain, "megatron.core.kchain.K0.absent", False),
], ids=["reexport-found", "star-found", "star-missing", "class-found", "class-missing"])
def test_chains_3000_long_resolve_without_recursion(chain_model, builder, use, ok):
    s = Surface(chain_model(builder))
    assert s.resolve(use).ok is ok


def test_a_reexport_chain_reaches_the_real_signature(chain_model):
    s = Surface(chain_model(S.reexport_chain))
    (target,) = s.resolve("megatron.core.chain.m0.X").targets
    assert target.kind == "function" and s.call_signature(target)["p"] == [["a", 1, 0]]


def test_an_import_cycle_stays_open_as_before(tmp_path):
    s = _surface(tmp_path, {"megatron/core/a.py": "from .b import *\n", "megatron/core/b.py": "from .a import *\n",
                            "megatron/core/c.py": "from .d import X\n", "megatron/core/d.py": "from .c import X\n"})
    assert s.resolve("megatron.core.a.anything").targets == [OPAQUE]  # Python would have bound something
    assert s.resolve("megatron.core.c.X").targets == [OPAQUE]


# ---- a call's cost is linear in its keywords -----------------------------------------------------------------------
def test_each_use_is_evaluated_once_per_release_however_many_keywords_fail(tmp_path, monkeypatch):
    spec = S.many_keywords(tmp_path, count=2000, releases=3)
    monkeypatch.setenv("MCORE_COMPAT_CACHE", spec["env"]["MCORE_COMPAT_CACHE"])
    calls = []
    real = c._evaluate_name
    monkeypatch.setattr(c, "_evaluate_name", lambda use, name, surface: calls.append(use.how) or real(use, name,
                                                                                                     surface))
    against = Path(spec["env"]["MCORE_COMPAT_CACHE"]) / "wheels" / "megatron_core-0.1.0-py3-none-any.whl"
    release_models()  # every cached release modelled: the history column sees all three
    report = surface_gate(str(spec["args"][1]), spec["args"][3], against=str(against))
    unexpected = [f for f in report.findings if f.kind == c.UNEXPECTED_KEYWORD]
    assert len(unexpected) == 2000 and all(f.history["works_in"] == [] for f in unexpected)
    assert all(f.on_against for f in unexpected)  # 0.1.0 refuses them as well
    assert calls.count("call") == 1 + 3 + 1  # the candidate, three releases, --against: not 2000 x 5


def test_close_matches_stop_at_the_budget(tmp_path, monkeypatch):
    wheel = S.wheel(tmp_path / "w", {"megatron/core/x.py": "def f(alpha_one, alpha_two):\n    pass\n"})
    use = "from megatron.core.x import f\nf(1, 2, " + ", ".join(f"alpha_on{i}=0" for i in range(20)) + ")\n"
    project = S.project(tmp_path / "p", use)
    close = [f.close for f in surface_gate(str(wheel), project).findings]
    assert len(close) == 20 and all(found == ["alpha_one", "alpha_two"] for found in close)
    monkeypatch.setattr(c, "SUGGEST_BUDGET", 10)  # the pool has 2 names: 5 findings fit
    close = [f.close for f in surface_gate(str(wheel), project).findings]
    assert close == [["alpha_one", "alpha_two"]] * 5 + [[]] * 15  # every finding is still reported


# ---- what the model reads ------------------------------------------------------------------------------------------
def test_a_member_path_past_the_depth_cap_is_refused(tmp_path):
    deep = {"megatron/core/" + "d/" * MAX_PATH_DEPTH + "x.py": "X = 1\n"}
    with pytest.raises(CandidateError, match=f"over the {MAX_PATH_DEPTH} the surface model reads"):
        _surface(tmp_path / "deep", deep)
    ok = {"megatron/core/" + "d/" * (MAX_PATH_DEPTH - 2) + "x.py": "X = 1\n"}
    s = _surface(tmp_path / "ok", ok)
    assert s.resolve("megatron.core" + ".d" * (MAX_PATH_DEPTH - 2) + ".x.X").ok
    assert "megatron.core.d.d" in s.modules  # every directory on the way is a (namespace) package


def test_a_file_over_the_parse_caps_is_unparsed_and_the_candidate_over_its_budget_refused(tmp_path):
    files = {"megatron/core/dense.py": S._dense(3 << 20), "megatron/core/small.py": "Y = 1\n"}
    model = build_model(open_source(S.wheel(tmp_path / "a", files)))
    assert model["unparsed"] == ["megatron/core/dense.py"] and model["modules"]["megatron.core.dense"]["ga"]
    many = {f"megatron/core/m{i}.py": S._dense(2000) for i in range(5)}
    with pytest.raises(CandidateError, match="node cap for one source"):
        build_model(open_source(S.wheel(tmp_path / "b", many)), budget=SourceBudget(max_nodes=5000))


def test_all_append_and_extend_are_exports(tmp_path):
    s = _surface(tmp_path, {
        "megatron/core/exports.py": "__all__ = ['a']\n__all__.append('b')\n__all__.extend(['c', 'd'])\n"
                                    "__all__ += ('e',)\na = b = c = d = e = f = 1\n",
        "megatron/core/opened.py": "__all__ = ['a']\n__all__.extend(other.__all__)\na = f = 1\n",
        "megatron/core/star.py": "from .exports import *\n",
        "megatron/core/star2.py": "from .opened import *\n"})
    for name in "abcde":
        assert s.resolve(f"megatron.core.star.{name}").ok, name
    assert not s.resolve("megatron.core.star.f").ok  # not exported
    assert s.resolve("megatron.core.star2.f").ok  # an extension we cannot read leaves __all__ open


# ---- the model cache -----------------------------------------------------------------------------------------------
def test_an_entry_edited_with_a_recomputed_digest_is_rebuilt(tmp_path, monkeypatch):
    monkeypatch.setenv("MCORE_COMPAT_CACHE", str(tmp_path / "cache"))
    wheel = S.wheel(tmp_path / "w", {"megatron/core/x.py": "def f(a):\n    pass\n"})
    first = surface_cache.model_for(wheel)
    assert Surface(first).resolve("megatron.core.x.f").ok
    surface_cache.save_models()  # what the run built is stored
    monkeypatch.setattr(surface_cache, "_LIVE", {})  # the next model_for reads the cache, as a new process does
    (entry,) = surface_cache.cache_dir().iterdir()
    body = entry.read_bytes().partition(b"\n")[2].replace(b'"f f 00|a:1:0"', b'"f f 00|a:1:0,b:1:1"')
    assert body != entry.read_bytes().partition(b"\n")[2]
    entry.write_bytes(hashlib.sha256(body).hexdigest().encode() + b"\n" + body)  # an edit whose digest matches
    assert surface_cache.read_cached(first["sha256"]) is None
    again = surface_cache.model_for(wheel)
    assert again == first  # rebuilt: the keyword b is not accepted
    surface_cache.save_models()
    assert surface_cache.read_cached(first["sha256"]) == again.state()  # and stored again with this account's key


def test_an_entry_made_with_another_key_is_not_trusted(tmp_path, monkeypatch):
    monkeypatch.setenv("MCORE_COMPAT_CACHE", str(tmp_path / "cache"))
    wheel = S.wheel(tmp_path / "w", {})
    first = surface_cache.model_for(wheel)
    monkeypatch.setenv("MCORE_COMPAT_STATE", str(tmp_path / "another-account"))  # the cache copied elsewhere
    assert surface_cache.read_cached(first["sha256"]) is None
    key = surface_cache.cache_key_path()
    assert key.is_file() and key.stat().st_mode & 0o777 == 0o600
    assert not key.is_relative_to(surface_cache.cache_dir().parent)  # the key does not travel with the cache


def test_a_key_others_can_read_or_a_linked_key_turns_the_cache_off(tmp_path, monkeypatch):
    monkeypatch.setenv("MCORE_COMPAT_CACHE", str(tmp_path / "cache"))
    wheel = S.wheel(tmp_path / "w", {})
    surface_cache.cache_key()
    key = surface_cache.cache_key_path()
    key.chmod(0o644)
    model = surface_cache.model_for(wheel)
    assert "readable or owned by others" in model["cache"] and not surface_cache.cache_dir().exists()
    key.unlink()
    (tmp_path / "elsewhere").write_text("0" * 64)
    os.chmod(tmp_path / "elsewhere", 0o600)
    key.symlink_to(tmp_path / "elsewhere")
    assert "is not a regular file" in surface_cache.model_for(wheel)["cache"]
    key.unlink()
    key.write_text("not hex\n")
    key.chmod(0o600)
    assert "not 64 hex digits" in surface_cache.model_for(wheel)["cache"]


# ---- through the CLI -----------------------------------------------------------------------------------------------
CLI_CASES = {  # case -> (exit code, phrase in stdout for 0/1, in the one stderr line for 3)
    "star-import-dag-40-layers": (1, "`megatron.core.dag.l0a.absent` | missing name"),
    "class-lattice-30-levels": (1, "`megatron.core.lattice.C0a.absent` | missing member"),
    "reexport-chain-3000-modules": (1, "`megatron.core.chain.m0.X(b=)` | unexpected keyword"),
    "class-chain-3000-deep": (1, "`megatron.core.kchain.K0.absent` | missing member"),
    "call-with-1000-unknown-keywords": (1, "1000 unguarded breaks"),
    "member-30000-directories-deep": (3, "30002 directories deep under megatron/"),
    "dense-8-mib-source-member": (0, "1 candidate files did not parse"),
}


@pytest.mark.parametrize("case", list(CLI_CASES))
def test_hostile_candidates_through_the_cli(tmp_path, case):
    spec = S.CASES[case](tmp_path)
    run = H.run_cli(spec["args"], env=spec["env"], timeout=90)
    code, phrase = CLI_CASES[case]
    assert run.returncode == code, (run.stdout[-500:], run.stderr[-500:])
    assert "Traceback" not in run.stderr and "internal error" not in run.stderr
    if code == 3:
        assert run.stderr.count("\n") == 1 and run.stderr.startswith("error: ") and phrase in run.stderr
    else:
        assert run.stderr == "" and phrase in run.stdout
    assert run.max_rss_mib < MAX_RSS_MIB or run.max_rss_mib != run.max_rss_mib  # nan: no /proc


def test_the_cli_json_of_many_keywords_lists_every_finding(tmp_path):
    spec = S.many_keywords(tmp_path, count=300)
    assert not H.needs_a_process(env=spec["env"])
    run = H.call_cli([*spec["args"], "--json"], env=spec["env"])
    assert run.returncode == 1
    report = json.loads(run.stdout)
    assert report["summary"]["breaking"] == 300 and len(report["findings"]) == 300
