# SPDX-License-Identifier: Apache-2.0
"""Download a release file from a package index without pip: standard library (urllib, html.parser) + packaging.

The index is read as PEP 691 JSON (PyPI) or as a PEP 503 HTML page (mirrors, ``file://`` indexes): every file's
URL, sha256 and yanked flag. Everything is bounded (listing and file size caps, timeouts); the file's sha256 is
checked before it is written into the cache atomically, so the cache never holds a partial or unverified file.
Every failure is a one-line ``CandidateError``.

Which index: the first of ``INDEX_ENV`` that is set, else PyPI. Configuration files (pip.conf, uv.toml) are not
read. Which file: any file of the version will do (the config files are pure Python): a wheel before the sdist,
a pure-Python wheel before platform wheels, then the first by file name; unyanked files before yanked ones.
"""
from __future__ import annotations

import base64
import hashlib
import http.client
import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)
from packaging.version import InvalidVersion

from .. import version as _v
from ..errors import CandidateError
from .archive import MAX_ARCHIVE_BYTES, MIB
from .fsutil import WriteError, atomic_write_bytes

INDEX_ENV = ("MCORE_COMPAT_INDEX_URL", "PIP_INDEX_URL", "UV_DEFAULT_INDEX", "UV_INDEX_URL")
DEFAULT_INDEX = "https://pypi.org/simple"
MAX_LISTING_BYTES = 16 * MIB  # megatron-core's PyPI listing is about 1 MB
MAX_FILE_BYTES = MAX_ARCHIVE_BYTES  # the archive reader refuses anything larger anyway
ACCEPT = "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.1"
_CHUNK = 1 * MIB


@dataclass(frozen=True)
class IndexFile:
    filename: str
    url: str
    sha256: str | None
    yanked: bool
    version: str  # normalized (str of packaging's Version)
    wheel: bool
    pure: bool  # a wheel for any platform (py3-none-any)
    size: int | None = None


def index_url() -> str:
    for name in INDEX_ENV:
        value = os.environ.get(name, "").strip()
        if value:
            return value.rstrip("/")
    return DEFAULT_INDEX


def cache_dir() -> Path:
    """``$MCORE_COMPAT_CACHE/wheels`` (default ``~/.cache/mcore-compat/wheels``), read at call time."""
    root = os.environ.get("MCORE_COMPAT_CACHE") or Path.home() / ".cache" / "mcore-compat"
    return Path(root) / "wheels"


def redact(url: str) -> str:
    """The URL without a password (index URLs may carry credentials)."""
    parts = urllib.parse.urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc))


# ------------------------------------------------------------------------------------------------ HTTP
def _request(url: str, accept: str | None) -> urllib.request.Request:
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("https", "http", "file"):
        raise CandidateError(f"unsupported URL scheme {parts.scheme!r} in {redact(url)!r} (http, https or file)")
    if parts.scheme == "file":
        path = urllib.request.url2pathname(parts.path)
        if os.path.isdir(path):  # a PEP 503 directory index, as pip reads it
            url = urllib.parse.urljoin(url.rstrip("/") + "/", "index.html")
    auth = None
    if parts.username is not None:
        user = urllib.parse.unquote(parts.username)
        password = urllib.parse.unquote(parts.password or "")
        auth = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
        host = parts.hostname + (f":{parts.port}" if parts.port else "")
        url = urllib.parse.urlunsplit(parts._replace(netloc=host))
    request = urllib.request.Request(url, headers={"User-Agent": "mcore-compat (stdlib urllib)"})
    if accept:
        request.add_header("Accept", accept)
    if auth:
        request.add_unredirected_header("Authorization", auth)  # never sent on to a redirect's host
    return request


def _get(url: str, *, cap: int, timeout: float, what: str, accept: str | None = None) -> tuple[bytes, str, str]:
    """(body, final URL, content type) of a GET, at most ``cap`` bytes, within ``timeout`` seconds in all."""
    deadline = time.monotonic() + timeout
    try:
        with urllib.request.urlopen(_request(url, accept), timeout=min(timeout, 60.0)) as response:
            length = response.headers.get("Content-Length")
            if length and length.isdigit() and int(length) > cap:
                raise CandidateError(f"{what} is {int(length):,} bytes, over the {cap:,}-byte cap ({redact(url)})")
            read = getattr(response, "read1", response.read)  # one socket read at a time: a trickle hits the deadline
            chunks, total = [], 0
            while True:
                chunk = read(min(_CHUNK, cap + 1 - total))
                if not chunk:
                    break
                total += len(chunk)
                if total > cap:
                    raise CandidateError(f"{what} is over the {cap:,}-byte cap ({redact(url)})")
                if time.monotonic() > deadline:
                    raise CandidateError(f"{what} took longer than {timeout:.0f} s ({redact(url)})")
                chunks.append(chunk)
            return b"".join(chunks), response.geturl(), response.headers.get("Content-Type", "")
    except CandidateError:
        raise
    except urllib.error.HTTPError as exc:
        raise CandidateError(f"{what}: HTTP {exc.code} {exc.reason} from {redact(url)}") from None
    except urllib.error.URLError as exc:
        reason = exc.reason.strerror if isinstance(exc.reason, OSError) and exc.reason.strerror else exc.reason
        raise CandidateError(f"{what}: cannot reach {redact(url)}: {reason}") from None
    except (TimeoutError, OSError, ValueError, http.client.HTTPException) as exc:  # timeouts, resets, cut-off bodies
        raise CandidateError(f"{what}: {type(exc).__name__} from {redact(url)}: {exc}") from None


# --------------------------------------------------------------------------------------------- listing
class _Anchors(HTMLParser):
    """The ``<a href>`` links of a PEP 503 page, with whether each carries ``data-yanked``."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.links: list[tuple[str, bool]] = []

    def handle_starttag(self, tag, attrs):
        if tag == "a":
            attributes = dict(attrs)
            if attributes.get("href"):
                self.links.append((attributes["href"], "data-yanked" in attributes))


def _raw_files(body: bytes, content_type: str, where: str) -> list[tuple[str, str, dict, bool, object]]:
    """(filename, url, hashes, yanked, size) per file, from a JSON or an HTML listing."""
    if "json" in content_type or body.lstrip()[:1] == b"{":
        try:
            payload = json.loads(body)
            files = payload["files"]
            out = []
            for f in files:
                yanked = f.get("yanked", False)
                out.append((f["filename"], f["url"], dict(f.get("hashes") or {}),
                            yanked is True or isinstance(yanked, str), f.get("size")))
            return out
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise CandidateError(f"{where} is not a PEP 691 JSON listing ({type(exc).__name__}: {exc})") from None
    parser = _Anchors()
    try:
        parser.feed(body.decode("utf-8", errors="replace"))
        parser.close()
    except Exception as exc:  # html.parser is lenient; anything it still raises means a broken page
        raise CandidateError(f"{where} is not a readable PEP 503 page ({type(exc).__name__}: {exc})") from None
    out = []
    for href, yanked in parser.links:
        url, fragment = urllib.parse.urldefrag(href)
        name, _, value = fragment.partition("=")
        hashes = {name: value} if value else {}
        filename = urllib.parse.unquote(urllib.parse.urlsplit(url).path.rsplit("/", 1)[-1])
        out.append((filename, url, hashes, yanked, None))
    return out


def _describe(project: str, filename: str) -> tuple[str, bool, bool] | None:
    """(normalized version, is wheel, is pure) when ``filename`` is a wheel or sdist of ``project``."""
    if not filename or filename != os.path.basename(filename) or filename.startswith(".") or "\\" in filename:
        return None  # never let an index choose a path outside the cache
    try:
        if filename.endswith(".whl"):
            name, version, _build, tags = parse_wheel_filename(filename)
            pure = any(t.abi == "none" and t.platform == "any" for t in tags)
            wheel = True
        else:
            name, version = parse_sdist_filename(filename)
            pure = wheel = False
    except (InvalidWheelFilename, InvalidSdistFilename, InvalidVersion):
        return None
    if name != canonicalize_name(project):
        return None
    return str(version), wheel, pure


def project_files(project: str, index: str | None = None, timeout: float = 30.0) -> list[IndexFile]:
    """Every wheel and sdist of ``project`` the index lists (other links are ignored)."""
    base = (index or index_url()).rstrip("/")
    url = f"{base}/{canonicalize_name(project)}/"
    body, final_url, content_type = _get(url, cap=MAX_LISTING_BYTES, timeout=timeout,
                                         what=f"the {project} listing", accept=ACCEPT)
    files = []
    for filename, href, hashes, yanked, size in _raw_files(body, content_type, f"the listing at {redact(url)}"):
        described = _describe(project, filename) if isinstance(filename, str) and isinstance(href, str) else None
        if described is None:
            continue
        sha = hashes.get("sha256")
        files.append(IndexFile(filename=filename, url=urllib.parse.urljoin(final_url, href),
                               sha256=sha.lower() if isinstance(sha, str) else None, yanked=bool(yanked),
                               version=described[0], wheel=described[1], pure=described[2],
                               size=size if isinstance(size, int) and not isinstance(size, bool) else None))
    return files


def choose(files: list[IndexFile], project: str, version: str, index: str) -> IndexFile:
    """The file to fetch for ``version`` (see the module doc for the order)."""
    wanted = str(_v.parse(version))
    mine = [f for f in files if _v.same(f.version, wanted)]
    if not mine:
        listed = sorted({f.version for f in files})
        newest = _v.newest(listed) if listed else "none"
        raise CandidateError(f"{project} {wanted} is not on {redact(index)} ({len(listed)} versions listed, "
                             f"newest {newest})")
    hashed = [f for f in mine if f.sha256]
    if not hashed:
        raise CandidateError(f"{redact(index)} gives no sha256 for any file of {project} {wanted}; refusing to "
                             "download unverified files")
    return min(hashed, key=lambda f: (f.yanked, not f.wheel, not f.pure, f.filename))


# -------------------------------------------------------------------------------------------- download
def cached(project: str, version: str, dest: Path) -> Path | None:
    """A file of that version already in ``dest`` (wheels first, then by name)."""
    if not dest.is_dir():
        return None
    hits = []
    for path in dest.iterdir():
        described = _describe(project, path.name)
        if described and _v.same(described[0], version) and path.is_file():
            hits.append((not described[1], path.name, path))
    return min(hits)[2] if hits else None


def fetch(file: IndexFile, dest: Path, timeout: float = 300.0, index: str | None = None) -> Path:
    """Download one listed file, check its sha256 and write it into ``dest`` atomically."""
    index = index or index_url()
    if urllib.parse.urlsplit(file.url).scheme == "file" and urllib.parse.urlsplit(index).scheme != "file":
        raise CandidateError(f"{redact(index)} points {file.filename} at a local file ({file.url}); refused")
    if file.size is not None and file.size > MAX_FILE_BYTES:
        raise CandidateError(f"{file.filename} is {file.size:,} bytes, over the {MAX_FILE_BYTES:,}-byte cap")
    if not file.sha256:
        raise CandidateError(f"no sha256 for {file.filename}; refusing to download an unverified file")
    body, _url, _type = _get(file.url, cap=MAX_FILE_BYTES, timeout=timeout, what=f"download of {file.filename}")
    got = hashlib.sha256(body).hexdigest()
    if got != file.sha256:
        raise CandidateError(f"sha256 mismatch for {file.filename}: the index says {file.sha256}, "
                             f"the download has {got}")
    dest.mkdir(parents=True, exist_ok=True)
    path = dest / file.filename
    try:
        atomic_write_bytes(path, body)
    except WriteError as exc:  # the gate reports every fetch problem as a CandidateError (exit 3)
        raise CandidateError(str(exc)) from None
    return path


def download(project: str, version: str, dest: Path | None = None, *, index: str | None = None,
             timeout: float = 300.0) -> Path:
    """A file of ``project==version`` in ``dest`` (default ``cache_dir()``), downloaded once."""
    dest = cache_dir() if dest is None else Path(dest)
    hit = cached(project, version, dest)
    if hit:
        return hit
    index = (index or index_url()).rstrip("/")
    chosen = choose(project_files(project, index, timeout=min(timeout, 60.0)), project, version, index)
    return fetch(chosen, dest, timeout=timeout, index=index)
