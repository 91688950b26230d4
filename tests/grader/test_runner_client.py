"""The runner's own Jupyter client (attnlib.grade.runner.Client), against a fake kernel.

The runner speaks the protocol itself instead of importing jupyter_client (for speed);
these tests hold it to the protocol: requests signed with the connection's key, iopub
messages taken only when signed with it, anything else counted against the output cap
and never read as an answer.
"""

import hashlib
import hmac
import json
import os
import queue
import uuid

import pytest

from attnlib.grade import runner

zmq = pytest.importorskip("zmq")


def sign(key, parts):
    mac = hmac.new(key, digestmod=hashlib.sha256)
    for part in parts:
        mac.update(part)
    return mac.hexdigest().encode()


def message(key, msg_type, content, parent=None):
    header = {"msg_id": uuid.uuid4().hex, "msg_type": msg_type, "session": "k", "version": "5.3"}
    parts = [json.dumps(x).encode() for x in (header, parent or {}, {}, content)]
    return [b"kernel.iopub", runner.DELIMITER, sign(key, parts), *parts]


@pytest.fixture
def kernel(tmp_path):
    """``(key, shell ROUTER, iopub XPUB, client)``: a fake kernel's sockets and a Client."""
    key = os.urandom(32).hex()
    context = zmq.Context()
    shell, iopub = context.socket(zmq.ROUTER), context.socket(zmq.XPUB)
    shell.bind(f"ipc://{tmp_path}/k-1")
    iopub.bind(f"ipc://{tmp_path}/k-2")
    info = {"transport": "ipc", "ip": f"{tmp_path}/k", "shell_port": 1, "iopub_port": 2}
    client = runner.Client(info | {"key": key})
    assert iopub.poll(5000), "the client never subscribed"
    assert iopub.recv() == b"\x01"  # subscribed to everything: nothing sent now is lost
    yield key.encode(), shell, iopub, client
    client.stop_channels()
    context.destroy(linger=0)


def test_requests_are_signed_with_the_connection_key(kernel):
    key, shell, _, client = kernel
    msg_id = client.execute("1 + 1")
    assert shell.poll(5000)
    frames = shell.recv_multipart()
    at = frames.index(runner.DELIMITER)
    signature, parts = frames[at + 1], frames[at + 2 : at + 6]
    assert hmac.compare_digest(signature, sign(key, parts))
    header, content = json.loads(parts[0]), json.loads(parts[3])
    assert header["msg_id"] == msg_id and header["msg_type"] == "execute_request"
    assert content["code"] == "1 + 1" and content["allow_stdin"] is False


def test_a_signed_message_is_read_and_waiting_blocks_until_the_timeout(kernel):
    key, _, iopub, client = kernel
    with pytest.raises(queue.Empty):
        client.get_iopub_msg(timeout=0.05)
    answer = {"data": {runner.ANSWER_MIME: {"exercise": "x", "data": "1"}}, "metadata": {}}
    iopub.send_multipart(message(key, "display_data", answer, parent={"msg_id": "m"}))
    msg = client.get_iopub_msg(timeout=5)
    assert msg["msg_type"] == "display_data"
    assert msg["content"] == answer and msg["parent_header"] == {"msg_id": "m"}


@pytest.mark.parametrize("fault", ["wrong key", "no delimiter", "not json", "not a dict"])
def test_an_unsigned_or_malformed_message_is_no_answer_but_counts_against_the_cap(kernel, fault):
    key, _, iopub, client = kernel
    answer = {"data": {runner.ANSWER_MIME: {"exercise": "x", "data": "1" * 5000}}}
    frames = message(b"not the key" if fault == "wrong key" else key, "display_data", answer)
    if fault == "no delimiter":
        frames.remove(runner.DELIMITER)
    elif fault in ("not json", "not a dict"):
        frames[-1] = b"{" if fault == "not json" else b"[1, 2]"
        frames[2] = sign(key, frames[3:7])
    iopub.send_multipart(frames)
    msg = client.get_iopub_msg(timeout=5)
    assert msg["msg_type"] is None and msg["content"] == {}
    assert runner.message_bytes(msg) >= sum(len(f) for f in frames)
