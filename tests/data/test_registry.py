"""Dataset registry: resolution order, clear errors, and downloads against a loopback HTTP server."""

from __future__ import annotations

import gzip
import hashlib
import http.server
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from paperlab import cli
from paperlab.data import registry
from paperlab.data.download import ChecksumError, download_file
from paperlab.data.registry import DataFile, DatasetNotFoundError

PAYLOAD = b"date,OT\n2020-01-01,1.0\n" * 200


class _Handler(http.server.BaseHTTPRequestHandler):
    files: dict[str, bytes] = {}

    def do_GET(self) -> None:  # noqa: N802 (http.server API)
        if self.path == "/fail":
            self.send_error(500, "boom")
            return
        body = self.files.get(self.path)
        if body is None:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture()
def server() -> Iterator[str]:
    _Handler.files = {"/data.csv": PAYLOAD}
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def _entry(sha: str, *, gz: bool = False) -> DataFile:
    return DataFile("timeseries/x.csv" + (".gz" if gz else ""), sha, "http://unused.invalid/x", gz)


def test_download_success_writes_verified_file(server: str, tmp_path: Path) -> None:
    sha = hashlib.sha256(PAYLOAD).hexdigest()
    dest = download_file(_entry(sha), tmp_path, url=f"{server}/data.csv")
    assert dest.read_bytes() == PAYLOAD
    assert list(dest.parent.iterdir()) == [dest]  # no temp file left behind


def test_download_gzip_entry_checks_decompressed_content(server: str, tmp_path: Path) -> None:
    sha = hashlib.sha256(PAYLOAD).hexdigest()
    dest = download_file(_entry(sha, gz=True), tmp_path, url=f"{server}/data.csv")
    assert gzip.decompress(dest.read_bytes()) == PAYLOAD
    assert registry.sha256_of(dest, gzip_content=True) == sha


def test_checksum_mismatch_leaves_nothing(server: str, tmp_path: Path) -> None:
    with pytest.raises(ChecksumError, match="checksum mismatch"):
        download_file(_entry("0" * 64), tmp_path, url=f"{server}/data.csv")
    assert not any(p.is_file() for p in tmp_path.rglob("*"))


def test_server_error_leaves_nothing_and_keeps_old_file(server: str, tmp_path: Path) -> None:
    old = tmp_path / "timeseries" / "x.csv"
    old.parent.mkdir(parents=True)
    old.write_bytes(b"previous")
    with pytest.raises(ConnectionError, match="could not download"):
        download_file(_entry("0" * 64), tmp_path, url=f"{server}/fail")
    assert old.read_bytes() == b"previous"
    assert sorted(p.name for p in old.parent.iterdir()) == ["x.csv"]


def test_resolution_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    explicit, env, cache = tmp_path / "explicit", tmp_path / "env", tmp_path / "cache"
    rel = registry.get_file("tinyshakespeare").relpath
    for root in (explicit, env, cache / "paperlab"):
        (root / rel).parent.mkdir(parents=True)
        (root / rel).write_text("x")
    monkeypatch.setenv("PAPERLAB_DATA", str(env))
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    assert registry.path("tinyshakespeare", root=explicit, verify=False) == explicit / rel
    assert registry.path("tinyshakespeare", verify=False) == env / rel
    monkeypatch.delenv("PAPERLAB_DATA")
    assert registry.path("tinyshakespeare", verify=False) == cache / "paperlab" / rel


def test_missing_dataset_error_names_file_variable_and_command(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PAPERLAB_DATA", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    with pytest.raises(DatasetNotFoundError) as err:
        registry.path("ETTh1")
    msg = str(err.value)
    assert "timeseries/ETTh1.csv" in msg and "PAPERLAB_DATA" in msg and "paperlab data download ETTh1" in msg


def test_unknown_names_list_valid_ones() -> None:
    with pytest.raises(ValueError, match="valid:.*tinyshakespeare"):
        registry.get_dataset("tiny")
    with pytest.raises(ValueError, match="several files"):
        registry.get_file("wikitext2")
    with pytest.raises(ValueError, match=r"valid: \['test', 'valid'\]"):
        registry.get_file("prosqa", "train")


def test_registered_checksums_match_shared_files() -> None:
    root = Path(__file__).resolve().parents[3] / "shared" / "data"
    if not root.is_dir():
        pytest.skip("../shared/data is not beside this checkout")
    for ds in registry.DATASETS.values():
        for entry in ds.files.values():
            assert registry.sha256_of(root / entry.relpath, gzip_content=entry.gzip) == entry.sha256, entry.relpath


def test_cli_download_and_list(server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                               capsys: pytest.CaptureFixture[str]) -> None:
    sha = hashlib.sha256(PAYLOAD).hexdigest()
    fake = registry.Dataset("fake", "test data", {"file": DataFile("fake/data.csv", sha, "http://unused.invalid")})
    monkeypatch.setitem(registry.DATASETS, "fake", fake)
    monkeypatch.setitem(_Handler.files, "/mirror/fake/data.csv", PAYLOAD)
    monkeypatch.setenv("PAPERLAB_DATA", str(tmp_path))
    assert cli.main(["data", "download", "fake", "--dir", str(tmp_path), "--base-url", server + "/mirror"]) == 0
    assert (tmp_path / "fake" / "data.csv").read_bytes() == PAYLOAD
    capsys.readouterr()
    assert cli.main(["data", "list"]) == 0
    line = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("fake"))
    assert str(tmp_path / "fake" / "data.csv") in line


def _fake_tinyshakespeare(root: Path, text: bytes) -> Path:
    rel = registry.get_file("tinyshakespeare").relpath
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_bytes(text)
    return root / rel


def test_a_truncated_data_file_is_refused_on_load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from paperlab.data.text import load_text

    real = Path(__file__).resolve().parents[3] / "shared" / "data" / "text" / "tinyshakespeare.txt"
    if not real.is_file():
        pytest.skip("../shared/data is not beside this checkout")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    data = real.read_bytes()
    cut = _fake_tinyshakespeare(tmp_path / "root", data[: len(data) // 3])
    with pytest.raises(registry.ChecksumError) as err:
        load_text("tinyshakespeare", root=tmp_path / "root")
    msg = str(err.value)
    assert str(cut) in msg and registry.get_file("tinyshakespeare").sha256 in msg
    assert hashlib.sha256(data[: len(data) // 3]).hexdigest() in msg
    assert "paperlab data download tinyshakespeare" in msg
    assert issubclass(ChecksumError, registry.ChecksumError)  # one error for downloads and loads


def test_verified_files_are_cached_by_size_and_mtime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    sha = hashlib.sha256(PAYLOAD).hexdigest()
    fake = registry.Dataset("fake", "test data", {"file": DataFile("fake/data.csv", sha, "http://unused.invalid")})
    monkeypatch.setitem(registry.DATASETS, "fake", fake)
    file = tmp_path / "root" / "fake" / "data.csv"
    file.parent.mkdir(parents=True)
    file.write_bytes(PAYLOAD)
    hashed = []
    real_sha = registry.sha256_of
    monkeypatch.setattr(registry, "sha256_of", lambda *a, **kw: hashed.append(1) or real_sha(*a, **kw))
    assert registry.path("fake", root=tmp_path / "root") == file
    assert registry.path("fake", root=tmp_path / "root") == file
    assert hashed == [1]  # the second load trusts the cached (size, mtime)
    assert (registry.cache_dir() / registry.VERIFIED_FILE).is_file()
    file.write_bytes(PAYLOAD[:-1] + b"!")  # same size, new mtime: hashed again and refused
    os.utime(file, ns=(file.stat().st_atime_ns, file.stat().st_mtime_ns + 10**9))
    with pytest.raises(registry.ChecksumError, match=r"expected sha256"):
        registry.path("fake", root=tmp_path / "root")
    assert hashed == [1, 1]
    assert registry.path("fake", root=tmp_path / "root", verify=False) == file
