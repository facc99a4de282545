"""compat.tooling.fetch against a local index (http.server on a free port, and file://): JSON and HTML listings, the file
it picks, sha256 checks, caps, HTTP errors, yanked files, credentials, and a cache that never holds a partial file.
The real-index tests are marked ``network``."""
from __future__ import annotations

import hashlib
import html
import io
import json
import os
import subprocess
import sys
import threading
import time
import urllib.parse
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from compat import version as _v
from compat.errors import CandidateError
from compat.tooling import fetch, refresh
from compat.tooling import gate as g
from compat.tooling.extract import DDP_PATH

ROOT = Path(__file__).resolve().parents[2]
JSON_TYPE = "application/vnd.pypi.simple.v1+json"

# ------------------------------------------------------------------------------------ a local index
WHEELS = {  # what a release of megatron-core looks like on PyPI: platform wheels of several CPythons + sdist
    "0.20.0": ["megatron_core-0.20.0-cp313-cp313-manylinux_2_28_x86_64.whl",
               "megatron_core-0.20.0-cp312-cp312-manylinux_2_28_aarch64.whl",
               "megatron_core-0.20.0-cp312-cp312-manylinux_2_28_x86_64.whl",
               "megatron_core-0.20.0.tar.gz"],
    "0.20.1": ["megatron_core-0.20.1-cp312-cp312-manylinux_2_28_x86_64.whl", "megatron_core-0.20.1.tar.gz"],
    "0.21.0rc1": ["megatron_core-0.21.0rc1-py3-none-any.whl"],
    "0.6.0": ["megatron_core-0.6.0-py3-none-any.whl"],
}


def body_of(filename: str) -> bytes:
    return f"contents of {filename}\n".encode() * 50


class Index:
    """Routes of a fake index: path -> (status, content type, body, extra headers) or a callable(handler)."""

    def __init__(self):
        self.routes: dict[str, object] = {}
        self.requests: list[tuple[str, dict]] = []
        self.url = ""

    def file_url(self, filename: str) -> str:
        return f"{self.url}/files/{filename}"

    def add_files(self, releases=WHEELS, yanked=(), bodies=None):
        bodies = bodies or {}
        records = []
        for version, names in releases.items():
            for name in names:
                data = bodies.get(name, body_of(name))
                self.routes[f"/files/{name}"] = (200, "application/octet-stream", data, {})
                records.append({"filename": name, "url": self.file_url(name), "size": len(data),
                                "hashes": {"sha256": hashlib.sha256(data).hexdigest()},
                                **({"yanked": "broken release"} if version in yanked else {})})
        return records

    def serve_json(self, records, path="/simple/megatron-core/"):
        payload = {"meta": {"api-version": "1.1"}, "name": "megatron-core", "files": records}
        self.routes[path] = (200, JSON_TYPE, json.dumps(payload).encode(), {})

    def serve_html(self, records, path="/simple/megatron-core/", relative=True):
        self.routes[path] = (200, "text/html", html_page(records, relative).encode(), {})

    def log(self, prefix="/files/"):
        return [p for p, _ in self.requests if p.startswith(prefix)]


def html_page(records, relative=True) -> str:
    rows = []
    for r in records:
        href = f"../../files/{r['filename']}" if relative else r["url"]
        if r["hashes"].get("sha256"):
            href += f"#sha256={r['hashes']['sha256']}"
        yanked = f' data-yanked="{html.escape(r["yanked"])}"' if r.get("yanked") else ""
        rows.append(f'<a href="{html.escape(href)}" data-requires-python="&gt;=3.10"{yanked}>{r["filename"]}</a><br>')
    return "<!DOCTYPE html><html><body><h1>Links for megatron-core</h1>\n" + "\n".join(rows) + "\n</body></html>"


@pytest.fixture
def index():
    state = Index()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"

        def do_GET(self):  # noqa: N802
            state.requests.append((self.path, dict(self.headers)))
            route = state.routes.get(urllib.parse.urlsplit(self.path).path)
            if route is None:
                self.send_error(404, "Not Found")
            elif callable(route):
                route(self)
            else:
                status, ctype, body, headers = route
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                for key, value in headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    yield state
    server.shutdown()
    server.server_close()


@pytest.fixture
def simple(index, monkeypatch):
    """The fake index, selected the way a user would: MCORE_COMPAT_INDEX_URL."""
    monkeypatch.setenv("MCORE_COMPAT_INDEX_URL", f"{index.url}/simple")
    return index


def only_files(dest: Path) -> list[str]:
    return sorted(p.name for p in dest.iterdir()) if dest.exists() else []


# ------------------------------------------------------------------------------------ which index
@pytest.mark.parametrize("env, expected", [
    ({}, "https://pypi.org/simple"),
    ({"UV_INDEX_URL": "https://uv-old/simple/"}, "https://uv-old/simple"),
    ({"UV_INDEX_URL": "https://uv-old/simple", "UV_DEFAULT_INDEX": "https://uv/simple"}, "https://uv/simple"),
    ({"UV_DEFAULT_INDEX": "https://uv/simple", "PIP_INDEX_URL": "https://pip/simple"}, "https://pip/simple"),
    ({"PIP_INDEX_URL": "https://pip/simple", "MCORE_COMPAT_INDEX_URL": "https://mine/simple"}, "https://mine/simple"),
    ({"MCORE_COMPAT_INDEX_URL": "  ", "PIP_INDEX_URL": "https://pip/simple"}, "https://pip/simple"),
])
def test_index_order(monkeypatch, env, expected):
    for name in fetch.INDEX_ENV:
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert fetch.index_url() == expected == refresh.index_url()


def test_cache_dir_is_read_at_call_time(monkeypatch, tmp_path):
    monkeypatch.setenv("MCORE_COMPAT_CACHE", str(tmp_path / "c"))
    assert fetch.cache_dir() == tmp_path / "c" / "wheels"
    monkeypatch.delenv("MCORE_COMPAT_CACHE")
    assert fetch.cache_dir() == Path.home() / ".cache" / "mcore-compat" / "wheels"


# ------------------------------------------------------------------------------------ listings and the choice
@pytest.mark.parametrize("form", ["json", "html", "html-absolute"])
def test_listing_json_and_html_agree(simple, form):
    records = simple.add_files(yanked=("0.20.1",))
    if form == "json":
        simple.serve_json(records)
    else:
        simple.serve_html(records, relative=form == "html")
    files = fetch.project_files("megatron-core")
    assert sorted(f.filename for f in files) == sorted(n for names in WHEELS.values() for n in names)
    by_name = {f.filename: f for f in files}
    sdist = by_name["megatron_core-0.20.0.tar.gz"]
    assert sdist.url == simple.file_url(sdist.filename) and not sdist.wheel and not sdist.yanked
    assert sdist.sha256 == hashlib.sha256(body_of(sdist.filename)).hexdigest()
    assert by_name["megatron_core-0.21.0rc1-py3-none-any.whl"].pure
    assert all(f.yanked == (f.version == "0.20.1") for f in files)
    accept = simple.requests[0][1]["Accept"]
    assert accept.startswith("application/vnd.pypi.simple.v1+json")
    # list_releases: finals >= 0.7.0 only, yanked when every file is
    assert refresh.list_releases() == {"0.20.0": False, "0.20.1": True}


def test_the_choice_is_deterministic_and_any_platform_will_do(simple, tmp_path):
    records = simple.add_files()
    simple.serve_json(records[::-1])  # listing order does not matter
    path = refresh.download("0.20.0", tmp_path)
    assert path.name == "megatron_core-0.20.0-cp312-cp312-manylinux_2_28_aarch64.whl"  # first wheel by name
    assert path.read_bytes() == body_of(path.name)
    pure = fetch.download("megatron-core", "0.21.0rc1", tmp_path / "other")
    assert pure.name == "megatron_core-0.21.0rc1-py3-none-any.whl"


def test_pure_wheel_first_then_wheel_then_sdist(simple, tmp_path):
    names = {"1.0": ["megatron_core-1.0.tar.gz", "megatron_core-1.0-cp39-cp39-win_amd64.whl",
                     "megatron_core-1.0-py3-none-any.whl"],
             "2.0": ["megatron_core-2.0.tar.gz"]}
    simple.serve_json(simple.add_files(names))
    assert refresh.download("1.0", tmp_path).name == "megatron_core-1.0-py3-none-any.whl"
    assert refresh.download("2.0", tmp_path).name == "megatron_core-2.0.tar.gz"


def test_unyanked_file_first_and_a_pinned_yanked_release_still_downloads(simple, tmp_path):
    records = simple.add_files({"1.0": ["megatron_core-1.0-py3-none-any.whl", "megatron_core-1.0.tar.gz"]})
    records[0]["yanked"] = True  # only the wheel is yanked
    records.append(simple.add_files({"2.0": ["megatron_core-2.0-py3-none-any.whl"]}, yanked=("2.0",))[0])
    simple.serve_json(records)
    assert refresh.download("1.0", tmp_path).name == "megatron_core-1.0.tar.gz"
    assert refresh.download("2.0", tmp_path).name == "megatron_core-2.0-py3-none-any.whl"  # like pip: == allows it
    assert refresh.list_releases() == {"1.0": False, "2.0": True}


def test_cache_hit_does_not_touch_the_index(simple, tmp_path):
    simple.serve_json(simple.add_files())
    first = refresh.download("0.20.0", tmp_path)
    count = len(simple.requests)
    assert refresh.download("0.20.0", tmp_path) == first
    assert len(simple.requests) == count
    # a file a previous tool put there (another platform's wheel) is just as good
    (tmp_path / "x").mkdir()
    older = tmp_path / "x" / "megatron_core-0.20.1-cp311-cp311-manylinux_2_28_x86_64.whl"
    older.write_bytes(b"from an earlier pip download")
    assert refresh.download("0.20.1", tmp_path / "x") == older
    assert len(simple.requests) == count


def test_version_spelling_is_normalized(simple, tmp_path):
    simple.serve_json(simple.add_files())
    assert refresh.download("0.20.0", tmp_path) == refresh.download("0.20", tmp_path)
    assert fetch.download("megatron-core", "0.21.0-rc.1", tmp_path).name.startswith("megatron_core-0.21.0rc1-")


def test_file_index_directory(tmp_path, monkeypatch):
    """A PEP 503 tree on disk (what /opt/pypi/simple is): directory URLs read index.html, as pip does."""
    files = tmp_path / "files"
    files.mkdir()
    records = []
    for name in ["megatron_core-0.20.0-cp312-cp312-manylinux_2_28_x86_64.whl", "megatron_core-0.20.0.tar.gz"]:
        (files / name).write_bytes(body_of(name))
        records.append({"filename": name, "url": (files / name).as_uri(),
                        "hashes": {"sha256": hashlib.sha256(body_of(name)).hexdigest()}})
    project = tmp_path / "simple" / "megatron-core"
    project.mkdir(parents=True)
    (project / "index.html").write_text(html_page(records, relative=False))
    monkeypatch.setenv("MCORE_COMPAT_INDEX_URL", (tmp_path / "simple").as_uri())
    path = refresh.download("0.20.0", tmp_path / "cache")
    assert path.name.endswith("x86_64.whl") and path.read_bytes() == body_of(path.name)


# ------------------------------------------------------------------------------------ failures: one line, no file
def assert_refused(dest: Path, call, *needles):
    with pytest.raises(CandidateError) as info:
        call()
    message = str(info.value)
    assert "\n" not in message, message
    for needle in needles:
        assert needle in message, message
    assert only_files(dest) == [], "a failed download must leave nothing in the cache (no partial, no temp file)"
    return message


def test_hash_mismatch(simple, tmp_path):
    records = simple.add_files()
    good = next(r for r in records if r["filename"].endswith("aarch64.whl"))
    simple.routes[f"/files/{good['filename']}"] = (200, "application/octet-stream", b"tampered" * 100, {})
    simple.serve_json(records)
    assert_refused(tmp_path, lambda: refresh.download("0.20.0", tmp_path), "sha256 mismatch", good["filename"],
                   good["hashes"]["sha256"])


def test_html_hash_mismatch(simple, tmp_path):
    records = simple.add_files()
    for r in records:
        r["hashes"]["sha256"] = "0" * 64
    simple.serve_html(records)
    assert_refused(tmp_path, lambda: refresh.download("0.20.0", tmp_path), "sha256 mismatch")


def test_no_sha256_is_refused(simple, tmp_path):
    records = simple.add_files()
    for r in records:
        r["hashes"] = {"md5": "d41d8cd98f00b204e9800998ecf8427e"}
    simple.serve_json(records)
    assert_refused(tmp_path, lambda: refresh.download("0.20.0", tmp_path), "no sha256")
    assert simple.log() == []


def test_listed_size_over_the_cap_is_refused_before_downloading(simple, tmp_path, monkeypatch):
    simple.serve_json(simple.add_files())
    monkeypatch.setattr(fetch, "MAX_FILE_BYTES", 100)
    assert_refused(tmp_path, lambda: refresh.download("0.20.0", tmp_path), "over the 100-byte cap")
    assert simple.log() == []


def test_content_length_over_the_cap(simple, tmp_path, monkeypatch):
    records = simple.add_files()
    for r in records:
        del r["size"]
    simple.serve_json(records)
    monkeypatch.setattr(fetch, "MAX_FILE_BYTES", 100)
    assert_refused(tmp_path, lambda: refresh.download("0.20.0", tmp_path), "over the 100-byte cap")


def test_body_over_the_cap_without_content_length(simple, tmp_path, monkeypatch):
    records = simple.add_files()
    for r in records:
        del r["size"]
    name = "megatron_core-0.20.0-cp312-cp312-manylinux_2_28_aarch64.whl"

    def endless(handler):  # no Content-Length: HTTP/1.0, the body ends when the connection closes
        handler.send_response(200)
        handler.send_header("Content-Type", "application/octet-stream")
        handler.end_headers()
        try:
            for _ in range(1000):
                handler.wfile.write(b"x" * 4096)
        except OSError:
            pass  # the client stopped reading at the cap

    simple.routes[f"/files/{name}"] = endless
    simple.serve_json(records)
    monkeypatch.setattr(fetch, "MAX_FILE_BYTES", 10_000)
    assert_refused(tmp_path, lambda: refresh.download("0.20.0", tmp_path), "over the 10,000-byte cap")


def test_listing_over_its_cap(simple, monkeypatch):
    simple.serve_json(simple.add_files())
    monkeypatch.setattr(fetch, "MAX_LISTING_BYTES", 500)
    with pytest.raises(CandidateError, match="listing is .* over the 500-byte cap"):
        refresh.list_releases()


def test_cut_off_download(simple, tmp_path):
    records = simple.add_files()
    name = "megatron_core-0.20.0-cp312-cp312-manylinux_2_28_aarch64.whl"

    def cut(handler):
        handler.send_response(200)
        handler.send_header("Content-Length", "100000")
        handler.end_headers()
        handler.wfile.write(b"only the start")

    simple.routes[f"/files/{name}"] = cut
    simple.serve_json(records)
    assert_refused(tmp_path, lambda: refresh.download("0.20.0", tmp_path), name)


def test_stalled_server_times_out(simple, tmp_path):
    records = simple.add_files()
    name = "megatron_core-0.20.0-cp312-cp312-manylinux_2_28_aarch64.whl"

    def stall(handler):
        handler.send_response(200)
        handler.send_header("Content-Length", "1000")
        handler.end_headers()
        handler.wfile.write(b"x")
        handler.wfile.flush()
        time.sleep(3)

    simple.routes[f"/files/{name}"] = stall
    simple.serve_json(records)
    t0 = time.monotonic()
    assert_refused(tmp_path, lambda: refresh.download("0.20.0", tmp_path, timeout=0.5), "Timeout")
    assert time.monotonic() - t0 < 2.5


def test_project_404(simple, tmp_path):
    message = assert_refused(tmp_path, lambda: refresh.download("0.20.0", tmp_path), "HTTP 404",
                             "/simple/megatron-core/")
    assert message.startswith("the megatron-core listing: ")


def test_file_404(simple, tmp_path):
    records = simple.add_files()
    del simple.routes["/files/megatron_core-0.20.0-cp312-cp312-manylinux_2_28_aarch64.whl"]
    simple.serve_json(records)
    assert_refused(tmp_path, lambda: refresh.download("0.20.0", tmp_path), "HTTP 404",
                   "download of megatron_core-0.20.0-cp312-cp312-manylinux_2_28_aarch64.whl")


def test_unreachable_index(monkeypatch, tmp_path):
    monkeypatch.setenv("MCORE_COMPAT_INDEX_URL", "http://127.0.0.1:9/simple")
    assert_refused(tmp_path, lambda: refresh.download("0.20.0", tmp_path), "cannot reach", "127.0.0.1:9")
    with pytest.raises(CandidateError, match="cannot reach"):
        refresh.list_releases()


def test_version_not_on_the_index(simple, tmp_path):
    simple.serve_json(simple.add_files())
    assert_refused(tmp_path, lambda: refresh.download("0.99.0", tmp_path), "megatron-core 0.99.0 is not on",
                   "newest 0.21.0rc1")


@pytest.mark.parametrize("body, ctype, needle", [
    (b'{"files": 3}', JSON_TYPE, "not a PEP 691 JSON listing"),
    (b'{"files": [{"url": "x"}]}', JSON_TYPE, "not a PEP 691 JSON listing"),
    (b"{not json", "application/json", "not a PEP 691 JSON listing"),
])
def test_malformed_listing(simple, tmp_path, body, ctype, needle):
    simple.routes["/simple/megatron-core/"] = (200, ctype, body, {})
    assert_refused(tmp_path, lambda: refresh.download("0.20.0", tmp_path), needle)


def test_html_listing_ignores_other_links_and_unsafe_names(simple, tmp_path):
    records = simple.add_files({"0.20.0": ["megatron_core-0.20.0.tar.gz"]})
    page = html_page(records) + (
        '<a href="/files/..%2Fescape%2Fmegatron_core-0.20.0-py3-none-any.whl#sha256=' + "0" * 64 + '">x</a>'
        '<a href="/files/other_pkg-0.20.0-py3-none-any.whl#sha256=' + "0" * 64 + '">y</a>'
        '<a href="/files/megatron_core-0.20.0.exe">z</a><a>no href</a>')
    simple.routes["/simple/megatron-core/"] = (200, "text/html", page.encode(), {})
    assert [f.filename for f in fetch.project_files("megatron-core")] == ["megatron_core-0.20.0.tar.gz"]
    assert refresh.download("0.20.0", tmp_path / "c").name == "megatron_core-0.20.0.tar.gz"
    assert not (tmp_path / "escape").exists()


def test_remote_index_may_not_point_at_local_files(simple, tmp_path):
    secret = tmp_path / "megatron_core-0.20.0-py3-none-any.whl"
    secret.write_bytes(b"local")
    records = [{"filename": secret.name, "url": secret.as_uri(),
                "hashes": {"sha256": hashlib.sha256(b"local").hexdigest()}}]
    simple.serve_json(records)
    assert_refused(tmp_path / "cache", lambda: refresh.download("0.20.0", tmp_path / "cache"), "local file")


def test_failed_cache_write_leaves_nothing(simple, tmp_path, monkeypatch):
    simple.serve_json(simple.add_files())

    def full_disk(*_args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(fetch.atomic_write_bytes.__globals__["os"], "replace", full_disk)
    assert_refused(tmp_path, lambda: refresh.download("0.20.0", tmp_path), "No space left on device")


def test_credentials_are_sent_but_never_printed(index, monkeypatch, tmp_path):
    index.serve_json(index.add_files())
    host = index.url.removeprefix("http://")
    monkeypatch.setenv("PIP_INDEX_URL", f"http://alice:s3cret@{host}/simple")
    monkeypatch.delenv("MCORE_COMPAT_INDEX_URL", raising=False)
    assert refresh.download("0.20.0", tmp_path).is_file()
    listing_headers = index.requests[0][1]
    assert listing_headers["Authorization"] == "Basic YWxpY2U6czNjcmV0"  # alice:s3cret
    with pytest.raises(CandidateError) as info:
        refresh.download("0.99.0", tmp_path)
    assert "s3cret" not in str(info.value) and "alice:***@" in str(info.value)


# ------------------------------------------------------------------------------------ the gate, end to end
def real_looking_wheel(version: str) -> bytes:
    path_text = ("from dataclasses import dataclass\n\n@dataclass\nclass DistributedDataParallelConfig:\n"
                 "    grad_reduce_in_fp32: bool = False\n")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        z.writestr(f"megatron_core-{version}.dist-info/METADATA",
                   f"Metadata-Version: 2.1\nName: megatron-core\nVersion: {version}\n")
        z.writestr(DDP_PATH, path_text)
    return buffer.getvalue()


def run_gate(*args, env):
    full = {**os.environ, "PYTHONPATH": str(ROOT), **env}
    return subprocess.run([sys.executable, "-m", "compat", "gate", *args], capture_output=True, text=True,
                          cwd=ROOT, env=full, timeout=120)


def test_gate_downloads_from_the_configured_index(index, tmp_path):
    name = "megatron_core-0.20.0-cp314-cp314-manylinux_2_28_x86_64.whl"  # a Python this machine does not run
    wheel = real_looking_wheel("0.20.0")
    records = index.add_files({"0.20.0": [name]}, bodies={name: wheel})
    index.serve_json(records)
    env = {"MCORE_COMPAT_INDEX_URL": f"{index.url}/simple", "MCORE_COMPAT_CACHE": str(tmp_path / "cache")}
    proc = run_gate("megatron-core==0.20.0", "--json", env=env)
    assert proc.returncode in (0, 1), proc.stderr
    assert json.loads(proc.stdout)["candidate"] == "0.20.0"
    assert (tmp_path / "cache" / "wheels" / name).read_bytes() == wheel

    index.routes[f"/files/{name}"] = (200, "application/octet-stream", b"evil", {})
    proc = run_gate("megatron-core==0.20.0", env={**env, "MCORE_COMPAT_CACHE": str(tmp_path / "cache2")})
    assert proc.returncode == 3 and "Traceback" not in proc.stderr
    assert proc.stderr.count("\n") == 1 and "sha256 mismatch" in proc.stderr
    assert not (tmp_path / "cache2" / "wheels").exists() or only_files(tmp_path / "cache2" / "wheels") == []


def test_fetch_release_has_no_python_fallbacks():
    assert not hasattr(g, "FALLBACK_PYTHONS")
    # the one process compat starts is git, reading a Megatron-LM checkout candidate's history (gate/blame.py)
    git_reader = ROOT / "compat" / "tooling" / "gate" / "blame.py"
    # ...and `pip config list`, which a host's noxfile runs through host_matrix.install_pin to pass pip.conf to uv
    pip_reader = ROOT / "compat" / "tooling" / "host_matrix.py"
    # ...and torchrun, which the gloo_world fixture (a host's test, never a release fetch) starts
    rank_launcher = ROOT / "compat" / "tooling" / "pytest_gloo.py"
    source = "\n".join(p.read_text() for p in (ROOT / "compat").rglob("*.py")
                       if p not in (git_reader, pip_reader, rank_launcher))
    host = pip_reader.read_text()
    assert host.count("subprocess.run(") == 1 and '[*cmd, "config", "list"]' in host
    launcher = rank_launcher.read_text()
    assert launcher.count("subprocess.Popen(") == 1 and "subprocess.run(" not in launcher and "pip" not in launcher
    assert '"-m", "pip"' not in source and "'-m', 'pip'" not in source and "subprocess" not in source
    blame = git_reader.read_text()
    assert blame.count("subprocess.run(") == 1 and '[git, "-C", str(tree), *_SAFE, *args]' in blame


# ------------------------------------------------------------------------------------ the real index
@pytest.mark.network
def test_real_index_lists_and_downloads(tmp_path):
    releases = refresh.list_releases()
    assert {"0.7.0", "0.14.0", "0.19.2"} <= set(releases) and releases["0.19.1"] is True
    files = [f for f in fetch.project_files("megatron-core") if f.version == "0.14.0"]
    assert len(files) > 1 and all(f.sha256 and len(f.sha256) == 64 for f in files)
    path = refresh.download("0.14.0", tmp_path)
    chosen = fetch.choose(files, "megatron-core", "0.14.0", fetch.index_url())
    assert path.name == chosen.filename
    assert hashlib.sha256(path.read_bytes()).hexdigest() == chosen.sha256
    assert _v.version_from_filename(path.name) == "0.14.0"
