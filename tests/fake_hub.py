"""A stand-in for the model hub on 127.0.0.1: the few HTTP endpoints huggingface_hub uses to look up a
revision, read its file metadata and download its files (``HF_ENDPOINT`` points the client at it).

Written from the hub's public API shape (``/api/models/{repo}/revision/{rev}``, ``/api/models/{repo}/tree/
{rev}``, ``/{repo}/resolve/{rev}/{file}``), not from swapkl's code. The server runs in a daemon thread and
stops by itself after ``lifetime`` seconds, whatever the test does.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import urllib.parse
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"


def git_blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class Repo:
    """Branches of one repository: name -> files, each branch with its own commit sha."""

    def __init__(self, repo_id: str, branches: dict[str, dict[str, bytes]], served: dict | None = None):
        self.repo_id = repo_id
        self.branches = branches
        self.served = served or {}  # (branch, file) -> bytes sent instead of the listed file: a corrupt transfer
        self.commits = {name: hashlib.sha1(f"{repo_id}@{name}".encode()).hexdigest() for name in branches}

    def files(self, revision: str) -> tuple[str, dict[str, bytes]] | None:
        """(commit, files) of a branch name or a commit sha; None when there is no such revision."""
        for name, commit in self.commits.items():
            if revision in (name, commit):
                return commit, self.branches[name]
        return None


def _entry(name: str, data: bytes) -> dict:
    lfs = name.endswith(".safetensors")
    out = {"size": len(data), "blobId": git_blob_id(data)}
    if lfs:
        out["lfs"] = {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data), "pointerSize": 134}
    return out


class Handler(BaseHTTPRequestHandler):
    repos: dict[str, Repo] = {}
    requests: list[tuple[str, str]] = []

    def log_message(self, *args):  # quiet
        pass

    def _send(self, status: int, body: bytes = b"", headers: dict | None = None, head: bool = False):
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def _missing(self, code: str, message: str, head: bool):
        self._send(404, json.dumps({"error": message}).encode(),
                   {"X-Error-Code": code, "X-Error-Message": message, "Content-Type": "application/json"}, head)

    def _route(self, head: bool):
        path = urllib.parse.unquote(urllib.parse.urlparse(self.path).path)
        self.requests.append((self.command, path))
        parts = path.strip("/").split("/")
        if parts[:2] == ["api", "models"] and len(parts) >= 6 and parts[4] in ("revision", "tree"):
            repo_id, kind, revision = "/".join(parts[2:4]), parts[4], parts[5]
            return self._api(repo_id, kind, revision, head)
        if len(parts) >= 5 and parts[2] == "resolve":
            return self._file("/".join(parts[:2]), parts[3], "/".join(parts[4:]), head)
        self._missing("EntryNotFound", f"no route {path}", head)

    def _api(self, repo_id, kind, revision, head):
        repo = self.repos.get(repo_id)
        if repo is None:
            return self._missing("RepoNotFound", f"Repository not found: {repo_id}", head)
        found = repo.files(revision)
        if found is None:
            return self._missing("RevisionNotFound", f"Invalid rev id: {revision}", head)
        commit, files = found
        if kind == "revision":
            body = {"id": repo_id, "modelId": repo_id, "sha": commit, "private": False, "gated": False,
                    "siblings": [{"rfilename": n, **_entry(n, d)} for n, d in sorted(files.items())]}
        else:
            body = [{"type": "file", "path": n, "size": len(d), "oid": git_blob_id(d),
                     **({"lfs": {"oid": _entry(n, d)["lfs"]["sha256"], "size": len(d), "pointerSize": 134}}
                        if n.endswith(".safetensors") else {})} for n, d in sorted(files.items())]
        self._send(200, json.dumps(body).encode(), {"Content-Type": "application/json"}, head)

    def _file(self, repo_id, revision, name, head):
        repo = self.repos.get(repo_id)
        found = None if repo is None else repo.files(revision)
        if found is None:
            return self._missing("RevisionNotFound", f"Invalid rev id: {revision}", head)
        commit, files = found
        if name not in files:
            return self._missing("EntryNotFound", f"{name} does not exist", head)
        entry = _entry(name, files[name])
        branch = next(b for b, c in repo.commits.items() if c == commit)
        data = repo.served.get((branch, name), files[name])
        etag = entry["lfs"]["sha256"] if "lfs" in entry else entry["blobId"]
        headers = {"X-Repo-Commit": commit, "ETag": f'"{etag}"', "Content-Type": "application/octet-stream"}
        if "lfs" in entry:
            headers |= {"X-Linked-Etag": f'"{etag}"', "X-Linked-Size": str(len(data))}
        self._send(200, data, headers, head)

    def do_GET(self):
        self._route(head=False)

    def do_HEAD(self):
        self._route(head=True)


@contextmanager
def serve(repos: list[Repo], lifetime: float = 120.0):
    """Run the fake hub; yields (endpoint URL, list of (method, path) requests). Stops after ``lifetime`` s."""
    handler = type("BoundHandler", (Handler,), {"repos": {r.repo_id: r for r in repos}, "requests": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    timer = threading.Timer(lifetime, server.shutdown)
    timer.daemon = True
    timer.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", handler.requests
    finally:
        timer.cancel()
        server.shutdown()
        server.server_close()


def client_env(url: str, hf_home) -> dict:
    """The environment of a process whose huggingface_hub client talks to the fake hub at ``url`` (and
    imports this checkout's swapkl)."""
    env = dict(os.environ, HF_ENDPOINT=url, HF_HOME=str(hf_home), HF_HUB_DISABLE_TELEMETRY="1",
               PYTHONPATH=os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]))
    env.pop("HF_HUB_OFFLINE", None)
    return env


def folder_files(folder) -> dict[str, bytes]:
    """{name: content} of the files of a saved checkpoint folder: one branch of a :class:`Repo`."""
    return {p.name: p.read_bytes() for p in Path(folder).iterdir() if p.is_file()}
