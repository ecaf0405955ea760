"""Other Jupyter kernels named by their notebooks: a real Jupyter Server, real sessions made
through its REST API, the kernels' real processes read from /proc."""

from __future__ import annotations

import contextlib
import http.server
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest
from jupyter_client import BlockingKernelClient

from nbgpumon._sources.processes.jupyter_kernels import JupyterKernels, KernelIdentity, kernel_args
from nbgpumon._sources.processes.server_sessions import (
    fetch_sessions,
    loopback_url,
    parse_time,
    running_servers,
)

from server_process import ServerProcess
from waiting import until

TOKEN = "nbgpumon-naming-test-token"
DEADLINE_S = 30.0
QUICK_S = 0.2  # identify() answers from its cache: far below this, whatever the servers do


@dataclass
class Kernel:
    """A kernel the server started for a session: its ids and its process as /proc shows it."""

    session_id: str
    kernel_id: str
    pid: int
    argv: list[str]
    environ: dict[str, str]
    client: BlockingKernelClient


@dataclass
class Server:
    url: str
    runtime_dir: Path
    root_dir: Path
    process: ServerProcess

    def api(self, path: str, method: str = "GET", body: object = None) -> object:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            f"{self.url}/api/{path}",
            data=data,
            headers={"Authorization": f"token {TOKEN}", "Content-Type": "application/json"},
            method=method,
        )
        with urllib.request.urlopen(request, timeout=10) as answer:
            text = answer.read().decode()
        return json.loads(text) if text.strip() else None

    def start_session(self, model: dict) -> Kernel:
        session = self.api("sessions", "POST", model)
        kernel_id = session["kernel"]["id"]
        pid = until(lambda: pid_with_argument(kernel_id), f"kernel {kernel_id}'s process")
        argv = argv_of(pid)
        # the server says "starting" until the kernel's first status after a request: a front
        # end's kernel_info_request (sent as it connects), here through the connection file
        client = BlockingKernelClient(connection_file=kernel_args(argv).connection_file)
        client.load_connection_file()
        client.start_channels()
        client.wait_for_ready(timeout=DEADLINE_S)
        # the server hears the kernel's status on its own iopub subscription, which may join
        # after that answer was sent (zmq drops what a late subscriber missed): ask again
        # until the server no longer says "starting"

        def seen_started() -> bool:
            if self.api(f"kernels/{kernel_id}").get("execution_state") != "starting":
                return True
            client.kernel_info()  # one more status on iopub (the reply is not waited for)
            return False

        until(seen_started, f"the server to see kernel {kernel_id} answer", every=0.5)
        return Kernel(session["id"], kernel_id, pid, argv, environ_of(pid), client)

    def end_session(self, kernel: Kernel) -> None:
        kernel.client.stop_channels()
        with contextlib.suppress(OSError):
            self.api(f"sessions/{kernel.session_id}", "DELETE")


def argv_of(pid: int) -> list[str]:
    raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    return [part.decode() for part in raw.rstrip(b"\0").split(b"\0")]


def environ_of(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes()
    pairs = (entry.decode(errors="replace").partition("=") for entry in raw.split(b"\0") if entry)
    return {key: value for key, _, value in pairs}


def pid_with_argument(text: str) -> int | None:
    """The process whose command line holds ``text``, once it has exec'd (not the fork)."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        with contextlib.suppress(OSError):
            if text in Path(f"/proc/{entry}/cmdline").read_text(errors="replace"):
                return int(entry)
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_runtime_file(directory: Path, name: str, info: object) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    text = info if isinstance(info, str) else json.dumps(info)
    (directory / name).write_text(text, encoding="utf-8")


def named(
    kernels: JupyterKernels,
    kernel: Kernel,
    environ: dict[str, str],
    notebook: str,
    state: str = "idle",
) -> KernelIdentity:
    """identify() once it names ``notebook`` in ``state`` (each call timed)."""

    def ask() -> KernelIdentity | None:
        began = time.perf_counter()
        found = kernels.identify(kernel.pid, kernel.argv, environ)
        assert time.perf_counter() - began < QUICK_S
        if found is not None and found.notebook == notebook and found.execution_state == state:
            return found
        return None

    return until(ask, f"identity naming {notebook!r}, {state}")


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    base = Path(tempfile.mkdtemp(prefix="nbgpumon-naming-"))
    env = dict(os.environ)
    for variable, sub in (
        ("JUPYTER_RUNTIME_DIR", "runtime"),
        ("JUPYTER_CONFIG_DIR", "config"),
        ("JUPYTER_DATA_DIR", "data"),
        ("IPYTHONDIR", "ipython"),
    ):
        (base / sub).mkdir()
        env[variable] = str(base / sub)
    env.pop("JPY_SESSION_NAME", None)
    env["JUPYTER_PLATFORM_DIRS"] = "1"
    env["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"
    root = base / "root"
    (root / "work").mkdir(parents=True)
    for notebook in ("analysis.ipynb", "work/deep.ipynb"):
        nbformat.write(nbformat.v4.new_notebook(), str(root / notebook))
    port = free_port()
    process = ServerProcess("jupyter server", base / "server.log")
    srv = Server(f"http://127.0.0.1:{port}", base / "runtime", root, process)
    cmd = [
        sys.executable, "-m", "jupyter", "server", "--no-browser",
        "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
        f"--ServerApp.root_dir={root}", f"--IdentityProvider.token={TOKEN}",
    ]  # fmt: skip
    if os.geteuid() == 0:
        cmd.append("--allow-root")
    try:
        process.start(
            cmd, env, lambda: "started" in srv.api("status"), 60.0, "/api/status", cwd=root
        )
        # its runtime file is written once it listens
        until(lambda: list(srv.runtime_dir.glob("jpserver-*.json")), "runtime file")
        yield srv
    finally:
        process.stop()
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="module")
def kernel(server: Server) -> Iterator[Kernel]:
    """A kernel for analysis.ipynb, made as a script would make it (no session name)."""
    k = server.start_session(
        {"path": "analysis.ipynb", "type": "notebook", "kernel": {"name": "python3"}}
    )
    try:
        yield k
    finally:
        server.end_session(k)


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A loopback port whose connections are taken (the backlog) and never answered."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        yield listener.getsockname()[1]


def test_a_kernel_is_named_by_its_notebook_with_its_state_and_idle_time(server, kernel):
    # how Jupyter Server starts a kernel for a session given a path alone: the path as given
    assert kernel.environ["JPY_SESSION_NAME"] == "analysis.ipynb"
    assert kernel_args(kernel.argv).kernel_id == kernel.kernel_id
    kernels = JupyterKernels(runtime_dirs=[str(server.runtime_dir)], refresh_every=0.2)
    try:
        found = named(kernels, kernel, kernel.environ, "analysis.ipynb")
        assert found.kernel_id == kernel.kernel_id
        assert found.idle_seconds is not None and 0.0 <= found.idle_seconds < 600
        # a cell running: busy, no idle time; then idle again, since it ended
        kernel.client.execute("import time; time.sleep(1.5)")
        busy = named(kernels, kernel, kernel.environ, "analysis.ipynb", "busy")
        assert busy.idle_seconds is None
        kernel.client.get_shell_msg(timeout=DEADLINE_S)  # its execute_reply
        after = named(kernels, kernel, kernel.environ, "analysis.ipynb")
        assert after.idle_seconds is not None and 0.0 <= after.idle_seconds < 10
    finally:
        kernels.close()


def test_without_a_session_name_the_servers_sessions_name_it(server, kernel):
    environ = {k: v for k, v in kernel.environ.items() if k != "JPY_SESSION_NAME"}
    kernels = JupyterKernels(runtime_dirs=[str(server.runtime_dir)], refresh_every=0.2)
    try:
        first = kernels.identify(kernel.pid, kernel.argv, environ)
        # nothing fetched yet: the kernel id alone, the fetch under way in the background
        assert first == KernelIdentity(kernel.kernel_id, None, None, None)
        found = named(kernels, kernel, environ, "analysis.ipynb")
    finally:
        kernels.close()
    assert found.kernel_id == kernel.kernel_id


def test_a_front_ends_session_name_is_absolute_and_the_server_gives_the_path_from_its_root(
    server,
):
    # JupyterLab names the file too; Jupyter Server then joins it to the kernel's directory
    k = server.start_session(
        {
            "path": "work/deep.ipynb",
            "name": "deep.ipynb",
            "type": "notebook",
            "kernel": {"name": "python3"},
        }
    )
    kernels = JupyterKernels(runtime_dirs=[str(server.runtime_dir)], refresh_every=0.2)
    try:
        assert k.environ["JPY_SESSION_NAME"] == str(server.root_dir / "work" / "deep.ipynb")
        first = kernels.identify(k.pid, k.argv, k.environ)
        assert first is not None and first.notebook == k.environ["JPY_SESSION_NAME"]
        named(kernels, k, k.environ, "work/deep.ipynb")
    finally:
        kernels.close()
        server.end_session(k)


def test_a_server_nobody_named_is_found_through_its_kernels_connection_file(server, kernel):
    environ = {k: v for k, v in kernel.environ.items() if k != "JPY_SESSION_NAME"}
    kernels = JupyterKernels(runtime_dirs=[], refresh_every=0.2)
    try:
        named(kernels, kernel, environ, "analysis.ipynb")
    finally:
        kernels.close()


def test_a_process_that_is_not_a_kernel_is_none_and_starts_no_fetch(server):
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        until(lambda: argv_of(sleeper.pid) == ["sleep", "30"], "sleep's argv")
        kernels = JupyterKernels(runtime_dirs=[str(server.runtime_dir)], refresh_every=0.0)
        assert kernels.identify(sleeper.pid, argv_of(sleeper.pid), environ_of(sleeper.pid)) is None
        assert not kernels.fetching
        kernels.close()
    finally:
        sleeper.kill()
        sleeper.wait()
    # argv that only looks like a kernel's is not one either
    assert not kernel_args(["tail", "-f", "/var/log/syslog"]).is_kernel
    assert not kernel_args(["python", "-m", "http.server"]).is_kernel
    assert kernel_args(["xpython", "-f", "/r/kernel-abc-1.json"]).kernel_id == "abc-1"
    assert kernel_args(["python", "-m", "ipykernel_launcher", "--f=/r/kernel-9.json"]).is_kernel
    assert kernel_args(["/x/ipykernel_launcher.py"]) == kernel_args(["python", "-m", "ipykernel"])


def test_bad_runtime_files_are_skipped_and_the_live_server_still_answers(server, kernel, tmp_path):
    bad = tmp_path / "runtime"
    dead = subprocess.Popen(["true"])
    dead.wait()
    live = os.getpid()
    write_runtime_file(bad, "jpserver-1.json", "{not json")
    write_runtime_file(bad, "jpserver-2.json", '{"url": "http://127.0.0.1:1/", "tok')
    write_runtime_file(bad, "jpserver-3.json", [1, 2])
    write_runtime_file(
        bad, "jpserver-4.json", {"url": server.url + "/", "token": TOKEN, "pid": dead.pid}
    )
    for i, url in enumerate(
        ("http://192.0.2.1:8888/", "http://localhost.example.com:8888/", "http+unix://%2Ftmp/")
    ):
        write_runtime_file(bad, f"jpserver-{10 + i}.json", {"url": url, "token": "t", "pid": live})
    write_runtime_file(
        bad, "nbserver-5.json", {"url": server.url + "/", "token": "wrong", "pid": live}
    )
    write_runtime_file(bad, "jpserver-6.json", {"url": server.url + "/nothing-here/", "pid": live})

    dirs = [str(bad), str(tmp_path / "missing"), str(server.runtime_dir)]
    asked = {s.sessions_url for s in running_servers(dirs)}
    # the dead server's and the remote ones are never asked; the wrong token's is (403)
    assert asked == {
        server.url + "/api/sessions",
        server.url + "/nothing-here/api/sessions",
    }
    sessions = fetch_sessions(dirs, timeout=2.0)
    assert sessions[kernel.kernel_id].path == "analysis.ipynb"
    assert sessions[kernel.kernel_id].type == "notebook"

    environ = {k: v for k, v in kernel.environ.items() if k != "JPY_SESSION_NAME"}
    kernels = JupyterKernels(runtime_dirs=dirs, refresh_every=0.2)
    try:
        named(kernels, kernel, environ, "analysis.ipynb")
    finally:
        kernels.close()


def test_a_server_on_every_address_is_asked_on_loopback(server, kernel, tmp_path):
    # a server started with --ip=0.0.0.0 writes the machine's name in its URL
    info = json.loads(next(server.runtime_dir.glob("jpserver-*.json")).read_text())
    port = info["port"]
    info.update(url=f"http://{socket.gethostname()}:{port}/", hostname="0.0.0.0")
    write_runtime_file(tmp_path, "jpserver-7.json", info)
    assert [s.sessions_url for s in running_servers([str(tmp_path)])] == [
        f"http://127.0.0.1:{port}/api/sessions"
    ]
    assert kernel.kernel_id in fetch_sessions([str(tmp_path)], timeout=5.0)


def test_identify_does_not_wait_for_a_server_that_never_answers(
    server, kernel, tmp_path, silent_port
):
    write_runtime_file(
        tmp_path,
        "jpserver-8.json",
        {"url": f"http://127.0.0.1:{silent_port}/", "token": "t", "pid": os.getpid()},
    )
    environ = {k: v for k, v in kernel.environ.items() if k != "JPY_SESSION_NAME"}
    # the silent server is asked first and holds the fetch for its whole timeout
    kernels = JupyterKernels(
        runtime_dirs=[str(tmp_path), str(server.runtime_dir)], refresh_every=0.2, timeout=1.0
    )
    try:
        began = time.perf_counter()
        first = kernels.identify(kernel.pid, kernel.argv, environ)
        assert time.perf_counter() - began < QUICK_S
        assert first == KernelIdentity(kernel.kernel_id, None, None, None)
        assert kernels.fetching
        # each later call answers at once too (named() times them), and after the silent
        # server's timeout the live server's sessions are in the cache
        named(kernels, kernel, environ, "analysis.ipynb")
    finally:
        kernels.close()


def test_a_forked_child_does_not_inherit_a_fetch_under_way(server, kernel, tmp_path, silent_port):
    write_runtime_file(
        tmp_path,
        "jpserver-9.json",
        {"url": f"http://127.0.0.1:{silent_port}/", "token": "t", "pid": os.getpid()},
    )
    kernels = JupyterKernels(runtime_dirs=[str(tmp_path)], refresh_every=0.0, timeout=10.0)
    try:
        kernels.identify(kernel.pid, kernel.argv, kernel.environ)
        assert kernels.fetching  # held by the silent server for 10 s
        read_end, write_end = os.pipe()
        child = os.fork()
        if child == 0:  # the child: report, then leave at once
            try:
                inherited = kernels.fetching
                kernels.identify(kernel.pid, kernel.argv, kernel.environ)
                os.write(write_end, f"{inherited} {kernels.fetching}".encode())
            finally:
                os._exit(0)
        os.close(write_end)
        with os.fdopen(read_end) as pipe:
            said = pipe.read()
        os.waitpid(child, 0)
        # none under way in the child at first; its own identify() starts one of its own
        assert said == "False True"
        assert kernels.fetching  # the parent's is still under way
    finally:
        kernels.close()
    assert not kernels.fetching


def test_urls_and_times_from_runtime_files_and_sessions():
    assert loopback_url("http://127.0.0.1:8888/") == "http://127.0.0.1:8888/"
    assert loopback_url("http://[::1]:8888/lab/") == "http://[::1]:8888/lab/"
    assert loopback_url("https://localhost:9/") == "https://localhost:9/"
    assert loopback_url("http://10.1.2.3:8888/") is None
    assert loopback_url("http://10.1.2.3:8888/", "10.1.2.3") is None
    assert loopback_url("http://box:8888/base/", "::") == "http://[::1]:8888/base/"
    assert loopback_url("http://127.0.0.1:99999/") is None  # not a port
    assert parse_time("2026-01-02T03:04:05.500000Z") == 1767323045.5
    assert parse_time("2026-01-02T03:04:05.500000") == 1767323045.5
    assert parse_time("yesterday") is None and parse_time(None) is None


def test_a_proxy_in_the_environment_never_sees_the_token(server, kernel):
    # a proxy that refuses everything, set before the module is imported (urllib reads the
    # environment's proxies as its opener is built): the sessions come only if it is not used
    env = {k: v for k, v in os.environ.items() if k.lower() != "no_proxy"}
    for variable in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY"):
        env[variable] = "http://127.0.0.1:1"
    env["PYTHONPATH"] = os.pathsep.join(sys.path)
    code = (
        "import sys\n"
        "from nbgpumon._sources.processes.server_sessions import fetch_sessions\n"
        "print(sorted(fetch_sessions(sys.argv[1:], timeout=5.0)))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(server.runtime_dir)],
        env=env,
        capture_output=True,
        text=True,
        timeout=DEADLINE_S,
    )
    assert kernel.kernel_id in done.stdout, done.stderr


def test_a_redirect_is_not_followed_with_the_token(tmp_path):
    asked: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            asked.append(f"{self.path} {self.headers.get('Authorization')}")
            if self.path.startswith("/first/"):
                self.send_response(302)
                self.send_header("Location", f"http://127.0.0.1:{port}/second/api/sessions")
                self.end_headers()
                return
            body = b"[]"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    port = httpd.server_address[1]
    serving = threading.Thread(target=httpd.serve_forever, daemon=True)
    serving.start()
    try:
        info = {"url": f"http://127.0.0.1:{port}/first/", "token": "secret", "pid": os.getpid()}
        write_runtime_file(tmp_path, "jpserver-11.json", info)
        assert fetch_sessions([str(tmp_path)], timeout=5.0) == {}
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert asked == ["/first/api/sessions token secret"]
