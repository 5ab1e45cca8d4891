"""Messages over the warm server's socket: a JSON header and an optional binary payload,
each preceded by its length (4 bytes, big-endian).

Requests and replies are JSON: a reply's payload is the search's JSON contract (with the
snippets' highlight markers when the terminal asked, read back by `SearchResponse.from_dict`)
or a KbError's kind and message. Nothing is unpickled: client and server need not share a
code version, and the client still checks that the peer runs as the same user and answered
with its own identity.
"""

from __future__ import annotations

import json
import os
import socket
import struct

TYPE_CHECKING = False  # typing's, without importing typing: every piped `kb search` loads this
if TYPE_CHECKING:
    from typing import Any

MAX_HEADER = 1 << 20
MAX_PAYLOAD = 256 << 20
_LENGTH = struct.Struct(">I")


class ProtocolError(Exception):
    """The other end said something that is not this protocol."""


class ServerBusy(ProtocolError):
    """The server is alive but every worker is taken: search in-process this time."""


class Peer:
    """The process at the other end of a unix socket."""

    __slots__ = ("pid", "uid")

    def __init__(self, pid: int, uid: int) -> None:
        self.pid, self.uid = pid, uid


def send_message(sock: socket.socket, header: dict[str, Any], payload: bytes = b"") -> None:
    data = json.dumps(header, separators=(",", ":")).encode()
    sock.sendall(_LENGTH.pack(len(data)) + data + _LENGTH.pack(len(payload)) + payload)


def recv_message(sock: socket.socket) -> tuple[dict[str, Any], bytes]:
    header_bytes = _recv_sized(sock, MAX_HEADER)
    try:
        header = json.loads(header_bytes)
    except ValueError as exc:
        raise ProtocolError(f"header is not JSON: {exc}") from exc
    if not isinstance(header, dict):
        raise ProtocolError("header is not an object")
    return header, _recv_sized(sock, MAX_PAYLOAD)


def _recv_sized(sock: socket.socket, limit: int) -> bytes:
    (size,) = _LENGTH.unpack(_recv_exact(sock, _LENGTH.size))
    if size > limit:
        raise ProtocolError(f"message of {size} bytes is over the {limit} limit")
    return _recv_exact(sock, size)


def _recv_exact(sock: socket.socket, size: int) -> bytes:
    parts: list[bytes] = []
    left = size
    while left:
        chunk = sock.recv(min(left, 1 << 20))
        if not chunk:
            raise ProtocolError("connection closed mid-message")
        parts.append(chunk)
        left -= len(chunk)
    return b"".join(parts)


def peer(sock: socket.socket) -> Peer | None:
    """The process at the other end of a unix socket (Linux SO_PEERCRED), None where the
    platform cannot say (the 0700 directory is then the only guard)."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return None
    creds = sock.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i"))
    pid, uid, _gid = struct.unpack("3i", creds)
    return Peer(pid, uid)


def same_user(sock: socket.socket) -> bool:
    found = peer(sock)
    return found is None or found.uid == os.getuid()
