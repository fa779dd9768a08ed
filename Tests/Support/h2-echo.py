"""An HTTP/2 server over cleartext (prior knowledge, h2c) for the transport's tests, on the
`h2` library (Debian's python3-h2, which scripts/test.sh installs). H2EchoServer.swift starts it.

It binds 127.0.0.1 on a free port and prints the port on stdout. It exits when its stdin
closes (the test process stopped it, or died), so no server outlives its tests.

Routes:
- POST /duplex: the response head goes out as soon as the request's head arrives, each DATA
  frame comes back at once as DATA, and the end carries trailers: body-length and body-crc
  (CRC-32) of what was received, and each request trailer back as echo-<name>.
- GET /trailers?kind=: the body "hello, trailers" and a trailing HEADERS frame by kind:
  fields (default: checksum: 7f3a and server-timing: db;dur=5), none (no trailers), nul
  (a NUL byte in a trailer's value, which HTTP/2 forbids), pseudo (a pseudo-header in the
  trailers, also forbidden).
"""

import os
import socket
import sys
import threading
import zlib
from urllib.parse import parse_qs, urlsplit

import h2.config
import h2.connection
import h2.events
import h2.exceptions


class Stream:
    def __init__(self):
        self.length = 0
        self.crc = 0
        self.trailers = []
        # Bytes to echo that the peer's flow-control window has no room for yet, and the
        # trailers that end the stream once they are out.
        self.pending = b""
        self.closing = None


def flush(connection, stream_id, stream):
    """Sends what the peer's windows allow of `stream`'s pending bytes, in frames no larger than
    it accepts; then its trailers, once nothing is pending. A stream the peer reset is skipped.
    True when the stream is over (its trailers went out, or the peer closed it): forget it then."""
    try:
        while stream.pending:
            room = min(connection.local_flow_control_window(stream_id), connection.max_outbound_frame_size)
            if room <= 0:
                return False
            connection.send_data(stream_id, stream.pending[:room])
            stream.pending = stream.pending[room:]
        if stream.closing is not None:
            connection.send_headers(stream_id, stream.closing, end_stream=True)
            stream.closing = None
            return True
        return False
    except h2.exceptions.StreamClosedError:
        return True


def serve(sock):
    config = h2.config.H2Configuration(
        client_side=False, header_encoding="utf-8", validate_outbound_headers=False,
        normalize_outbound_headers=False)
    connection = h2.connection.H2Connection(config=config)
    connection.initiate_connection()
    sock.sendall(connection.data_to_send())
    streams = {}
    try:
        while True:
            data = sock.recv(65536)
            if not data:
                return
            for event in connection.receive_data(data):
                if isinstance(event, h2.events.RequestReceived):
                    headers = dict(event.headers)
                    route = urlsplit(headers.get(":path", "/"))
                    if route.path == "/duplex":
                        # Only echoing streams are remembered, until their trailers are out.
                        streams[event.stream_id] = Stream()
                        connection.send_headers(event.stream_id, [
                            (":status", "200"), ("content-type", "application/octet-stream")])
                    elif route.path == "/trailers":
                        kind = parse_qs(route.query).get("kind", ["fields"])[0]
                        connection.send_headers(event.stream_id, [(":status", "200")])
                        connection.send_data(event.stream_id, b"hello, trailers")
                        trailers = {
                            "none": None,
                            "nul": [("checksum", "7f\x003a")],
                            "pseudo": [(":status", "200")],
                        }.get(kind, [("checksum", "7f3a"), ("server-timing", "db;dur=5")])
                        if trailers is None:
                            connection.end_stream(event.stream_id)
                        else:
                            connection.send_headers(event.stream_id, trailers, end_stream=True)
                    else:
                        connection.send_headers(event.stream_id, [(":status", "404")], end_stream=True)
                elif isinstance(event, h2.events.DataReceived):
                    connection.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                    stream = streams.get(event.stream_id)
                    if stream is not None:
                        stream.length += len(event.data)
                        stream.crc = zlib.crc32(event.data, stream.crc)
                        stream.pending += event.data
                        if flush(connection, event.stream_id, stream):
                            streams.pop(event.stream_id, None)
                elif isinstance(event, h2.events.TrailersReceived):
                    stream = streams.get(event.stream_id)
                    if stream is not None:
                        stream.trailers = list(event.headers)
                elif isinstance(event, h2.events.StreamEnded):
                    stream = streams.get(event.stream_id)
                    if stream is not None:
                        trailers = [("body-length", str(stream.length)), ("body-crc", str(stream.crc))]
                        trailers += [("echo-" + name, value) for name, value in stream.trailers]
                        stream.closing = trailers
                        if flush(connection, event.stream_id, stream):
                            streams.pop(event.stream_id, None)
                elif isinstance(event, h2.events.WindowUpdated):
                    targets = streams.items() if event.stream_id == 0 else [
                        (event.stream_id, streams[event.stream_id])] if event.stream_id in streams else []
                    for stream_id, stream in list(targets):
                        if flush(connection, stream_id, stream):
                            streams.pop(stream_id, None)
                elif isinstance(event, h2.events.StreamReset):
                    streams.pop(event.stream_id, None)
                elif isinstance(event, h2.events.ConnectionTerminated):
                    return
            pending = connection.data_to_send()
            if pending:
                sock.sendall(pending)
    except (OSError, h2.exceptions.ProtocolError):
        return
    finally:
        sock.close()


def main():
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    print(listener.getsockname()[1], flush=True)

    def watch_stdin():
        sys.stdin.buffer.read()
        os._exit(0)

    threading.Thread(target=watch_stdin, daemon=True).start()
    while True:
        client, _ = listener.accept()
        client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        threading.Thread(target=serve, args=(client,), daemon=True).start()


if __name__ == "__main__":
    main()
