"""A version comparison guards a use when it reads megatron-core's version, by its words or through a name the file
bound to megatron (``package_info.__version__``); a megatron helper about another package's version
(``is_te_min_version``) guards nothing about megatron-core."""
from __future__ import annotations

import pytest

CANDIDATE = {
    "megatron/core/parallel_state.py": "def get_data_parallel_rank():\n    return 0\n",
    "megatron/core/utils.py": "def is_te_min_version(version):\n    return True\n",
}


@pytest.mark.parametrize("test, guarded", [
    ("Version(package_info.__version__) < Version('0.2.0')", True),
    ("Version(mcore_info.__version__) < Version('0.2.0')", True),
    ("not is_te_min_version('2.0')", False),
    ("Version(torch.__version__) < Version('2.5')", False),
])
def test_which_version_a_comparison_reads(surface_report, test, guarded):
    source = f"""
        import torch
        from packaging.version import Version
        from megatron.core import package_info, parallel_state
        from megatron.core import package_info as mcore_info
        from megatron.core.utils import is_te_min_version


        def group():
            if {test}:
                return parallel_state.get_old_group()
            return parallel_state.get_data_parallel_rank()
        """
    (finding,) = surface_report({"app/__init__.py": "", "app/groups.py": source}, CANDIDATE).findings
    assert finding.name == "megatron.core.parallel_state.get_old_group"
    assert finding.guarded is guarded
