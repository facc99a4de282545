"""An ImportError handler that turns a feature off (``except ImportError: megatron_available = False``): the failing
import is guarded, and the guard names the flag and what the project skips with it off, in its file and in the
files that import the flag."""
from __future__ import annotations

CANDIDATE = {"megatron/core/utils.py": "def kept():\n    pass\n"}

BACKEND = """
    try:
        from megatron.core.utils import removed_helper
        megatron_available = True
    except ImportError:
        megatron_available = False

    if megatron_available:
        def build_backend():
            return removed_helper()

        class MegatronWorker:
            pass

    if not megatron_available:
        pass
    else:
        backend_name = "megatron"
    """


def test_the_guard_names_the_flag_and_what_it_turns_off(surface_report):
    (finding,) = surface_report({"app/__init__.py": "", "app/backend.py": BACKEND}, CANDIDATE).findings
    assert (finding.path, finding.line, finding.guarded) == ("app/backend.py", 3, True)
    assert "the fallback sets megatron_available = False" in finding.guard
    assert ("with megatron_available off, the project skips app/backend.py:8 `megatron_available` "
            "(def build_backend, class MegatronWorker), app/backend.py:15 `not megatron_available` (1 line)"
            ) in finding.guard


def test_a_file_that_imports_the_flag_is_named_too(surface_report):
    user = """
        from app.backend import megatron_available as HAVE_MEGATRON


        def pick():
            if HAVE_MEGATRON and len("x"):
                return "megatron"
            return "native"
        """
    project = {"app/__init__.py": "", "app/backend.py": BACKEND, "app/choose.py": user}
    guard = surface_report(project, CANDIDATE).findings[0].guard
    assert "app/choose.py:6 `HAVE_MEGATRON and len('x')` (1 line)" in guard
    assert guard.index("app/backend.py:8") < guard.index("app/choose.py:6")  # the flag's own file first


def test_a_flag_nothing_tests_is_said_so(surface_report):
    source = """
        try:
            from megatron.core.utils import removed_helper
        except ImportError:
            removed_helper = None
        """
    (finding,) = surface_report({"app/__init__.py": "", "app/only.py": source}, CANDIDATE).findings
    assert finding.guard.endswith("nothing in the project reads removed_helper")


def test_a_handler_that_turns_nothing_off_says_nothing_more(surface_report):
    source = """
        try:
            from megatron.core.utils import removed_helper
        except ImportError:
            from app.local import removed_helper
        """
    project = {"app/__init__.py": "", "app/only.py": source, "app/local.py": "def removed_helper():\n    pass\n"}
    (finding,) = surface_report(project, CANDIDATE).findings
    assert finding.guarded and "skips" not in finding.guard and "reads" not in finding.guard


def test_except_importerror_or_modulenotfounderror_is_an_importerror_guard(surface_report):
    # Python evaluates the BoolOp: ``except A or B:`` is ``except A:``; ``except A and B:`` is ``except B:``
    source = """
        try:
            from megatron.core.utils import removed_helper
        except ImportError or ModuleNotFoundError:
            removed_helper = None
        try:
            from megatron.core.utils import other_removed
        except ValueError or ImportError:
            other_removed = None
        """
    first, second = surface_report({"app/__init__.py": "", "app/only.py": source}, CANDIDATE).findings
    assert first.guarded and first.guard.startswith("try/except ImportError (line 2)")
    assert not second.guarded  # catches ValueError only


def test_conditional_expressions_and_asserts_are_tests_of_the_flag(surface_report):
    source = """
        try:
            from megatron.core.utils import removed_helper, removed_norm
            HAVE_TE = True
        except ImportError:
            removed_norm = None
            HAVE_TE = False
        NORM = removed_norm if HAVE_TE else "plain"


        def build():
            assert HAVE_TE, "needs TE"
            return removed_helper()
        """
    finding = surface_report({"app/__init__.py": "", "app/spec.py": source}, CANDIDATE).findings[0]
    assert ("with HAVE_TE off, the project skips app/spec.py:8 `HAVE_TE` (takes `'plain'`), app/spec.py:12 "
            "`HAVE_TE` (the rest of its block; without it, it stops)") in finding.guard
    assert "removed_norm is read at app/spec.py:8 (in no test the gate follows)" in finding.guard


def test_an_or_with_the_flag_turned_off_and_other_reads(surface_report):
    user = """
        import pytest

        from app.backend import megatron_available


        def choose(version):
            if not megatron_available or version == 1:
                return "native"
            else:
                return "megatron"


        @pytest.mark.skipif(not megatron_available, reason="no megatron")
        def test_backend():
            pass
        """
    project = {"app/__init__.py": "", "app/backend.py": BACKEND, "app/choose.py": user}
    guard = surface_report(project, CANDIDATE).findings[0].guard
    assert "app/choose.py:8 `not megatron_available or version == 1` (1 line)" in guard  # its else needs the flag
    assert "app/choose.py:14" not in guard  # a decorator's argument is a read, not a test: the flag has tests


def test_a_flag_read_only_outside_tests_is_named_with_its_reads(surface_report):
    source = """
        try:
            from megatron.core.utils import removed_helper
            HAVE_HELPER = True
        except ImportError:
            HAVE_HELPER = False


        def features():
            return {"helper": HAVE_HELPER}
        """
    (finding,) = surface_report({"app/__init__.py": "", "app/only.py": source}, CANDIDATE).findings
    assert finding.guard.endswith("HAVE_HELPER is read at app/only.py:10 (in no test the gate follows)")
