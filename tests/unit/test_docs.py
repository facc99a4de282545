"""The README stays short and every link in the Markdown documents resolves; generated samples match real output."""
from __future__ import annotations

import functools
import re
import subprocess
from pathlib import Path

import pytest

from tools import explain_sample

REPO = Path(__file__).resolve().parents[2]
README_MAX_LINES = 150
README_MAX_WORDS = 1300
DOCUMENTS = sorted([REPO / "README.md", REPO / "SECURITY.md", REPO / "CONTRIBUTING.md",
                    *(REPO / "docs").rglob("*.md"), REPO / "benchmarks" / "results" / "README.md"])
FENCE = re.compile(r"^```.*?^```", re.S | re.M)
CODE_SPAN = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def prose(text: str) -> str:
    """The text without code blocks and code spans: a `[x](y)` inside code is no link."""
    return CODE_SPAN.sub("", FENCE.sub("", text))


def anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = CODE_SPAN.sub(lambda m: m.group(0)[1:-1], heading).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


@functools.cache
def anchors(path: Path) -> set[str]:
    headings = [line.lstrip("#") for line in FENCE.sub("", path.read_text(encoding="utf-8")).splitlines()
                if re.match(r"#{1,6} ", line)]
    return {anchor(h) for h in headings}


def broken_links(path: Path, root: Path = REPO) -> list[str]:
    out = []
    for target in LINK.findall(prose(path.read_text(encoding="utf-8"))):
        if re.match(r"[a-z]+:", target):
            continue  # https:, mailto:: not checked offline
        file_part, _, fragment = target.partition("#")
        resolved = (path.parent / file_part).resolve() if file_part else path
        if not resolved.exists():
            out.append(f"{path.relative_to(root)}: {target} (no such file)")
        elif fragment and (resolved.is_dir() or resolved.suffix != ".md" or fragment not in anchors(resolved)):
            out.append(f"{path.relative_to(root)}: {target} (no such anchor)")
    return out


def test_readme_is_short():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= README_MAX_LINES
    assert len(prose(text).split()) <= README_MAX_WORDS


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda p: p.relative_to(REPO).as_posix())
def test_every_link_resolves(path):
    assert broken_links(path) == []


def test_link_check_finds_a_missing_file_and_a_missing_anchor(tmp_path):
    doc = tmp_path / "doc.md"
    doc.write_text("# Title\n\n[ok](#title) [gone](missing.md) [bad](#nowhere) `[code](not-a-link.md)`\n")
    names = [line.split(": ", 1)[1] for line in broken_links(doc, root=tmp_path)]
    assert names == ["missing.md (no such file)", "#nowhere (no such anchor)"]


def test_anchor_follows_github():
    assert anchor(" Multi-rank tests under `torchrun`") == "multi-rank-tests-under-torchrun"
    assert anchor(" What the gate says") == "what-the-gate-says"


def test_explain_sample_is_real_output():
    assert explain_sample.main(["--check"]) == 0


def test_explain_sample_check_sees_a_changed_output():
    text = explain_sample.TARGET.read_text(encoding="utf-8")
    real = explain_sample.command_output()
    assert explain_sample.replaced(text, real) == text
    assert explain_sample.replaced(text, real.replace("megatron-default", "user", 1)) != text


@pytest.mark.parametrize("package", ["compat/tooling/gate", "compat/tooling/gate/surface"])
def test_package_docstring_names_only_its_modules(package):
    """The docstring's last paragraph, its module list, names every module or subpackage there and nothing else."""
    folder = REPO / package
    modules_paragraph = (folder / "__init__.py").read_text(encoding="utf-8").split('"""')[1].strip().split("\n\n")[-1]
    named = set(re.findall(r"``([a-z_]+)``", modules_paragraph)) - {"ast", "megatron"}
    present = {p.stem for p in folder.glob("*.py") if p.stem != "__init__"} | {
        p.name for p in folder.iterdir() if (p / "__init__.py").exists()}
    assert named - present == set()
    assert present - named == set()


def indexed(relative: str, index: str) -> bool:
    """The results index names the file: its path or name, its folder (``gate/``), or a ``<placeholder>`` pattern."""
    if relative == "README.md" or relative in index or Path(relative).name in index:
        return True
    folder = relative.split("/")[0] + "/"
    if "/" in relative and folder in index:
        return True
    patterns = [re.escape(p).replace(re.escape("<"), "<").replace(re.escape(">"), ">")
                for p in re.findall(r"`([^`]*<[^`]*>[^`]*)`", index)]
    return any(re.fullmatch(re.sub(r"<[^>]*>", r"[\\w.+-]+", p), relative) for p in patterns)


def test_results_index_names_every_results_file():
    results = REPO / "benchmarks" / "results"
    index = (results / "README.md").read_text(encoding="utf-8")
    done = subprocess.run(["git", "-C", str(REPO), "ls-files", "benchmarks/results"], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip("not a git checkout: the tracked results are unknown")
    files = [Path(line).relative_to("benchmarks/results").as_posix() for line in done.stdout.splitlines()]
    assert files and [f for f in files if not indexed(f, index)] == []


def test_results_index_check_sees_an_unlisted_file():
    index = "| `megatron_labels/<version>.json` | x |\n[gate reports](gate/)\nvendor_size.json"
    assert indexed("megatron_labels/0.19.2.json", index) and indexed("gate/a.md", index)
    assert indexed("vendor_size.json", index) and not indexed("new_figure.json", index)


REPRODUCE = re.compile(r"python -m (?:benchmarks|tools)\.\w+|python -m compat |nox -[st] |tests/\w+/lane\.py|benchmarks/gpu/\w+\.sh")


@pytest.mark.parametrize("path", sorted((REPO / "benchmarks" / "results").rglob("*.md")),
                         ids=lambda p: p.relative_to(REPO).as_posix())
def test_results_page_says_how_to_reproduce_it(path):
    if path.parent.name in ("gate",) and path.name != "README.md":
        pytest.skip("a recorded gate report: its folder's README.md says how it was made")
    assert REPRODUCE.search(path.read_text(encoding="utf-8")), "name the command that makes this figure"
