"""The project scan's first round in worker processes (pool.py) changes nothing in the report: a synthetic project
with every kind of round (megatron users, a re-export, a project subclass of a megatron class used in a file that
never says megatron, a file that does not parse between two too large to read) gives byte for byte the report of a run in
one process; where no worker process can be had, or one dies, the scan runs in one process."""
from __future__ import annotations

import json
import os
import shutil
import threading

import pytest

from compat.tooling.gate.surface import pool, scan_cache
from compat.tooling.gate.surface import project as surface_project
from compat.tooling.gate.surface.project import scan_project
from compat.tooling.gate.surface.release_gate import surface_gate

from .builders import RELEASE_0_1_0 as BASE
from .builders import RELEASE_0_2_0 as NEW
from .builders import make_project, synthetic_releases

FILES = {
    "pkg/__init__.py": "",
    "pkg/state.py": """
        from megatron.core import parallel_state as mpu
        def world():
            return mpu.get_tensor_model_parallel_world_size()
        """,
    "pkg/helper.py": "from megatron.core import parallel_state as ps\n",
    "pkg/uses_helper.py": """
        from pkg.helper import ps
        def rank():
            return ps.get_no_such_rank()
        """,
    "pkg/models.py": """
        from megatron.core.distributed.ddp import DistributedDataParallel
        class Wrapped(DistributedDataParallel):
            pass
        """,
    "pkg/train.py": """
        from pkg.models import Wrapped
        def build(model):
            w = Wrapped(None, None, model, disable_bucketing=True, overlap=True)
            return w.no_such_member
        """,
    "pkg/broken.py": "import megatron.core\ndef f(:\n",
    "pkg/abig.py": "# megatron\n" + "x = 1\n" * 40,
    "pkg/zbig.py": "# megatron\n" + "x = 1\n" * 40,
    "pkg/utils.py": """
        try:
            from megatron.core.utils import get_batch_on_this_cp_rank
        except ImportError:
            get_batch_on_this_cp_rank = None
        def batch(b):
            return get_batch_on_this_cp_rank(b, is_hybrid_cp=False)
        """,
}
FILES.update({f"pkg/many/m{i}.py": f"from megatron.core.utils import unwrap_model\nu{i} = unwrap_model(1, {i})\n"
              for i in range(12)})


@pytest.fixture
def releases(tmp_path, monkeypatch):
    return synthetic_releases(tmp_path, monkeypatch, {"0.1.0": BASE, "0.2.0": NEW})


ONLY_THREAD = pool.only_thread


@pytest.fixture(autouse=True)
def alone_in_the_process(monkeypatch):
    """pytest's workers may run threads of their own (which the scan does not touch): fork anyway."""
    monkeypatch.setattr(pool, "only_thread", lambda: True)


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.setattr(surface_project, "MAX_FILE_BYTES", 200)  # [az]big.py: too large, read around broken.py
    monkeypatch.setattr(pool, "MIN_BYTES", 0)
    monkeypatch.setattr(pool, "CHUNK", 1)
    return make_project(tmp_path / "proj", FILES)


def rendered(candidate, root) -> tuple[str, str]:
    """The JSON and markdown reports of a run with no scan cache (a first run's scan)."""
    shutil.rmtree(scan_cache.cache_dir() / "scan", ignore_errors=True)
    report = surface_gate(str(candidate), root)
    return json.dumps(report.to_dict(), indent=1, default=str), report.to_markdown()


def worker_runs(monkeypatch) -> list:
    """Records each map_in_workers answer: the test must see the workers used, not a silent fallback."""
    answers: list = []
    real = pool.map_in_workers

    def spy(*args):
        answers.append(real(*args))
        return answers[-1]
    monkeypatch.setattr(surface_project, "map_in_workers", spy)
    return answers


def test_the_report_of_a_scan_in_workers_is_the_report_of_one_process(releases, project, monkeypatch):
    monkeypatch.setattr(pool, "worker_count", lambda: 2)
    answers = worker_runs(monkeypatch)
    in_workers = rendered(releases["0.2.0"], project)
    assert answers and all(a is not None for a in answers)
    monkeypatch.setattr(pool, "worker_count", lambda: 1)
    answers.clear()
    alone = rendered(releases["0.2.0"], project)
    assert answers == [None]
    assert in_workers == alone
    findings = json.loads(alone[0])["findings"]
    lines = {(f["path"], f["line"]) for f in findings}
    # what each round finds is there (so that agreeing is not agreeing on nothing)
    assert {("pkg/state.py", 4), ("pkg/uses_helper.py", 4), ("pkg/train.py", 5), ("pkg/many/m11.py", 2)} <= lines
    skipped = json.loads(alone[0])["scan"]["skipped"]
    assert [path for path, _why in skipped] == ["pkg/abig.py", "pkg/broken.py", "pkg/zbig.py"]


def test_without_worker_processes_the_scan_runs_in_one_process(tmp_path, project, monkeypatch):
    monkeypatch.setenv("MCORE_COMPAT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(pool, "worker_count", lambda: 2)
    monkeypatch.setenv("MCORE_COMPAT_WORKERS", "1")
    alone = scan_project(project, cache=False)
    monkeypatch.delenv("MCORE_COMPAT_WORKERS")

    def no_processes(*_args, **_kwargs):
        raise OSError("no processes here")
    monkeypatch.setattr(pool, "ProcessPoolExecutor", no_processes)
    answers = worker_runs(monkeypatch)
    fallback = scan_project(project, cache=False)
    assert answers == [None]
    assert (fallback.uses, fallback.skipped, fallback.classes) == (alone.uses, alone.skipped, alone.classes)


def _exit_at_once(_value):
    os._exit(3)


def test_a_worker_that_dies_leaves_the_work_to_the_caller(monkeypatch):
    monkeypatch.setattr(pool, "worker_count", lambda: 2)
    monkeypatch.setattr(pool, "MIN_BYTES", 0)
    assert pool.map_in_workers(_exit_at_once, [(1,), (2,), (3,)], [1, 1, 1]) is None
    assert pool.map_in_workers(abs, [(-1,), (2,), (-3,)], [1, 5, 1]) == [1, 2, 3]


def test_another_thread_in_the_process_means_no_fork(monkeypatch):
    monkeypatch.setattr(pool, "only_thread", ONLY_THREAD)
    monkeypatch.setattr(pool, "worker_count", lambda: 2)
    monkeypatch.setattr(pool, "MIN_BYTES", 0)
    release = threading.Event()
    other = threading.Thread(target=release.wait)
    other.start()
    try:
        assert pool.map_in_workers(abs, [(-1,), (2,)], [1, 1]) is None
    finally:
        release.set()
        other.join()


def test_workers_are_at_most_the_cpus_and_the_environment_caps_them(monkeypatch):
    cpus = os.cpu_count() or 1
    monkeypatch.setenv("MCORE_COMPAT_WORKERS", "1")
    assert pool.worker_count() == 1
    monkeypatch.setenv("MCORE_COMPAT_WORKERS", str(cpus + 8))
    assert 1 <= pool.worker_count() <= cpus
    monkeypatch.setenv("MCORE_COMPAT_WORKERS", "many")
    assert 1 <= pool.worker_count() <= cpus
