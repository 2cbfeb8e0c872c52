"""rc.real's loading: what happens when pretrained weights are missing, and a hub that misbehaves.

No test reaches the network: the hub is a local socket (HF_ENDPOINT=http://127.0.0.1:PORT) that
accepts and never answers, refuses, or answers 404; each call must end within a bounded time
with one sentence saying what happened.
"""

import http.server
import os
import socket
import subprocess
import sys
import threading
import time

import pytest
import torch

import rankcollapse as rc

pytest.importorskip("transformers")


@pytest.fixture
def no_local_copy(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-hub-cache"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "empty-hf-home"))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv(rc.real.hub.TIMEOUT_ENV, raising=False)


@pytest.fixture
def stalled_endpoint(monkeypatch):
    """A server that accepts connections and never answers."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    held, stop = [], threading.Event()

    def accept():
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{server.getsockname()[1]}")
    yield
    stop.set()
    thread.join(2)
    for conn in held:
        conn.close()
    server.close()


def test_stalled_hub_times_out_with_a_message_that_says_so(no_local_copy, stalled_endpoint):
    start = time.monotonic()
    with pytest.raises(rc.real.ModelUnavailable, match=r"xlnet-base-cased.*timed out after 1 s"):
        rc.real.load("xlnet-base-cased", pretrained=True, allow_download=True, timeout=1)
    assert time.monotonic() - start < 20


def test_the_timeout_is_a_readers_setting(no_local_copy, stalled_endpoint, monkeypatch, capsys):
    monkeypatch.setenv(rc.real.hub.TIMEOUT_ENV, "1.5")
    assert rc.real.hub_timeout() == 1.5 and rc.real.hub_timeout(4) == 4.0
    start = time.monotonic()
    assert (
        rc.real.try_load("bert-base-cased", True, allow_download=True, instead="MiniLM stands in")
        is None
    )
    assert time.monotonic() - start < 20
    out = capsys.readouterr().out.strip()
    assert "timed out after 1.5 s" in out and out.endswith("MiniLM stands in.")
    monkeypatch.setenv(rc.real.hub.TIMEOUT_ENV, "soon")
    with pytest.raises(ValueError, match="RANKCOLLAPSE_HUB_TIMEOUT"):
        rc.real.hub_timeout()
    with pytest.raises(ValueError, match="timeout"):
        rc.real.hub_timeout(-1)
    monkeypatch.delenv(rc.real.hub.TIMEOUT_ENV)
    assert rc.real.hub_timeout() == rc.real.hub.DEFAULT_TIMEOUT


def test_refused_and_not_found_are_told_apart(no_local_copy, monkeypatch):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{port}")
    with pytest.raises(rc.real.ModelUnavailable, match="refused the connection"):
        rc.real.load("albert-base-v2", pretrained=True, allow_download=True, timeout=5)

    class NotFound(http.server.BaseHTTPRequestHandler):
        def do_HEAD(self):
            self.send_response(404)
            self.end_headers()

        def log_message(self, *args):
            pass

    httpd = http.server.HTTPServer(("127.0.0.1", 0), NotFound)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{httpd.server_address[1]}")
        assert "HTTP 404, not found" in rc.real.hub_problem("gpt2", timeout=5)
        with pytest.raises(rc.real.ModelUnavailable, match="no model gpt2 .*not found"):
            rc.real.load("gpt2", pretrained=True, allow_download=True, timeout=5)
    finally:
        httpd.shutdown()


def test_pretrained_hub_model_unavailable_is_one_clear_message(capsys, monkeypatch, no_local_copy):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert (
        rc.real.try_load("xlnet-base-cased", pretrained=True, instead="using MiniLM instead")
        is None
    )
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and "xlnet-base-cased" in out[0] and "downloads not allowed" in out[0]
    assert out[0].endswith("using MiniLM instead.")
    with pytest.raises(rc.real.ModelUnavailable, match="HF_HUB_OFFLINE"):
        rc.real.load("bert-base-cased", pretrained=True, allow_download=True)


def test_lineup_offline_prints_one_line(capsys, monkeypatch, no_local_copy):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    models = rc.real.lineup(0, hub=True)
    assert [m.pretrained for m in models] == [False, False, False, True]
    out = capsys.readouterr().out.strip().splitlines()
    assert (
        len(out) == 1
        and "bert-base-cased, albert-base-v2, xlnet-base-cased" in out[0]
        and "MiniLM" in out[0]
    )


def test_pretrained_hub_model_from_a_local_copy(tmp_path):
    """The real from_pretrained path: a (tiny, stand-in) local copy in the hub cache is found
    offline."""
    import transformers

    snap = tmp_path / "hub" / "models--albert-base-v2" / "snapshots" / "0123"
    snap.mkdir(parents=True)
    (tmp_path / "hub" / "models--albert-base-v2" / "refs").mkdir()
    (tmp_path / "hub" / "models--albert-base-v2" / "refs" / "main").write_text("0123")
    config = transformers.AlbertConfig(
        vocab_size=30000,
        embedding_size=16,
        hidden_size=48,
        num_hidden_layers=3,
        num_attention_heads=4,
        intermediate_size=96,
        hidden_act="gelu_new",
    )
    torch.manual_seed(0)
    transformers.AlbertModel(config).save_pretrained(snap)
    code = (
        "import rankcollapse as rc\n"
        "m = rc.real.load('albert-base-v2', pretrained=True)\n"
        "assert m.pretrained and m.tokenizer is None and 'local copy' in m.source, m.source\n"
        "ids = rc.real.token_windows(m, 2, 16)\n"
        "assert ids.max() < 30000\n"
        "print(tuple(rc.real.hidden_states(m, ids, 'san', 'clean').shape))\n"
    )
    env = {**os.environ, "HF_HUB_CACHE": str(tmp_path / "hub"), "HF_HUB_OFFLINE": "1"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "(4, 2, 16, 48)"
