"""A client of an orderer's channel participation API (Fabric v2.3 on), for the smoke driver.

The REST endpoints osnadmin calls (``orderer/common/channelparticipation``, ``internal/osnadmin``):
``POST /participation/v1/channels`` with the channel's genesis block as the multipart field
``config-block`` joins the orderer to the channel (201); ``GET /participation/v1/channels/<channel>``
returns its ``status`` and ``consensusRelation``. Mutual TLS: the orderer's TLS CA, the orderer
organization's admin client pair. Ours, not osnadmin: cmd/osnadmin came with v2.3.0, and fabric-2.5's
recipe, which builds v2.2 too, builds none. The end-to-end role runs this file on each orderer's host (main).
"""

from __future__ import annotations

import http.client
import json
import ssl
import uuid
from pathlib import Path

PATH = "/participation/v1/channels"


def _connection(address: str, ca: str, cert: str, key: str, timeout: float) -> http.client.HTTPSConnection:
    context = ssl.create_default_context(cafile=ca)
    context.load_cert_chain(cert, key)
    host, port = address.rsplit(":", 1)
    return http.client.HTTPSConnection(host, int(port), context=context, timeout=timeout)


def _request(address: str, method: str, path: str, tls: tuple[str, str, str], body: bytes = b"",
             headers: dict | None = None, timeout: float = 10.0) -> tuple[int, dict]:
    conn = _connection(address, *tls, timeout=timeout)
    try:
        conn.request(method, path, body=body or None, headers=headers or {})
        response = conn.getresponse()
        raw = response.read()
    finally:
        conn.close()
    try:
        doc = json.loads(raw) if raw else {}
    except ValueError:
        doc = {"error": raw.decode(errors="replace")}
    return response.status, doc


def multipart(field: str, filename: str, data: bytes) -> tuple[bytes, str]:
    """A multipart/form-data body holding one file field, and its content type."""
    boundary = uuid.uuid4().hex
    head = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"{field}\"; filename=\"{filename}\"\r\n"
            "Content-Type: application/octet-stream\r\n\r\n").encode()
    return head + data + f"\r\n--{boundary}--\r\n".encode(), f"multipart/form-data; boundary={boundary}"


def join(address: str, block: Path, tls: tuple[str, str, str]) -> dict:
    """Join the orderer at ``address`` (its admin endpoint) to the channel of genesis block ``block``;
    ``tls``: (CA file, client certificate, client key). Raises RuntimeError unless it answers 201."""
    body, content_type = multipart("config-block", "config.block", Path(block).read_bytes())
    status, doc = _request(address, "POST", PATH, tls, body, {"Content-Type": content_type})
    if status != 201:
        raise RuntimeError(f"channel join at {address}: HTTP {status}: {doc.get('error', doc)}")
    return doc


def channel(address: str, name: str, tls: tuple[str, str, str]) -> dict:
    """The orderer's view of channel ``name``: ``status``, ``consensusRelation``, ``height``."""
    status, doc = _request(address, "GET", f"{PATH}/{name}", tls)
    if status != 200:
        raise RuntimeError(f"channel {name} at {address}: HTTP {status}: {doc.get('error', doc)}")
    return doc


def main(argv: list[str] | None = None) -> int:
    """``participation.py join|channel``: the end-to-end role runs this file on the orderer's host
    (ansible.builtin.script; it imports nothing of the harness). Prints the orderer's JSON answer."""
    import argparse
    import sys

    ap = argparse.ArgumentParser(prog="participation.py", description=__doc__.splitlines()[0])
    ap.add_argument("action", choices=("join", "channel"))
    ap.add_argument("--address", required=True, help="the orderer's admin endpoint, host:port")
    ap.add_argument("--ca", required=True, help="the orderer's TLS CA")
    ap.add_argument("--cert", required=True, help="the admin's TLS client certificate")
    ap.add_argument("--key", required=True, help="the admin's TLS client key")
    ap.add_argument("--block", help="join: the channel's genesis block")
    ap.add_argument("--channel", help="channel: its name")
    args = ap.parse_args(argv)
    tls = (args.ca, args.cert, args.key)
    try:
        doc = join(args.address, Path(args.block), tls) if args.action == "join" else channel(args.address, args.channel, tls)
    except (OSError, RuntimeError) as e:
        print(f"participation.py {args.action}: {e}", file=sys.stderr)
        return 1
    print(json.dumps(doc, sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
