"""`make lab` really serves the course: JupyterLab answers its contents API with the lessons."""

import json
import os
import secrets
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_make_lab_serves_the_notebooks(tmp_path: Path) -> None:
    port, token = _free_port(), secrets.token_hex(16)
    args = (
        f"--no-browser --ip=127.0.0.1 --port={port} --ServerApp.port_retries=0 "
        f"--IdentityProvider.token={token}"
    )
    env = {
        **os.environ,
        "JUPYTERLAB_SETTINGS_DIR": str(tmp_path / "settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(tmp_path / "workspaces"),
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"),
    }
    server = subprocess.Popen(
        ["make", "-s", "lab", f"LAB_ARGS={args}"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    stderr = server.stderr
    assert stderr is not None  # stderr=PIPE
    try:
        url = f"http://127.0.0.1:{port}/api/contents/notebooks?token={token}"
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(url, timeout=5) as response:
                    listing = json.load(response)
                break
            except OSError:
                assert server.poll() is None, stderr.read().decode()[-2000:]
                assert time.monotonic() < deadline, "JupyterLab did not answer within 60 s"
                time.sleep(0.5)
        served = {item["name"] for item in listing["content"]}
        on_disk = {p.name for p in (ROOT / "notebooks").glob("*.ipynb")}
        assert on_disk and served >= on_disk
        with urllib.request.urlopen(
            f"http://127.0.0.1:{port}/lab?token={token}", timeout=10
        ) as page:
            assert page.status == 200 and b"JupyterLab" in page.read()
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
        stderr.close()
