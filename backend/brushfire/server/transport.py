"""The WebSocket transport `brushfire serve` runs: uvicorn's (websockets' Sans-I/O), except
when a client sends a frame over the frame limit.

There, uvicorn writes the close frame (1009) and closes the socket at once. The frame's
bytes, and anything after them, are then unread in the socket, and closing a socket
with unread data resets the connection: the reset overtakes the close frame and makes
the client's system drop whatever it had received and not yet read (issue 36: a client
that left 60 `details` replies unread and sent a 4 MiB frame read 17 replies, then a
reset, 1006, no close frame). Here instead:

- the app hears it (`websocket.disconnect`, code 1009) after the messages that came
  before the frame (uvicorn drops those read in the same chunk as the frame's first
  bytes), and answers them, in order, before it closes: their replies are sent as frames
  of their own, ahead of the close frame;
- then the close frame (1009, with the reason websockets gives: the frame's size and the
  limit), then the end of the server's side of the stream (TCP half-close);
- meanwhile the rest of the client's bytes are read and discarded, until the client
  closes its side; so the replies, the close frame and the end arrive in order, and
  nothing resets.

A client that does not read them gets LINGER seconds, then the connection is dropped.
"""

from __future__ import annotations

from typing import Any

from uvicorn.protocols.utils import ClientDisconnected
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from websockets.frames import CloseCode, Frame, Opcode

LINGER = 30.0  # seconds a connection stays after a frame over the limit: its replies, then the close


class WebSocketProtocol(WebSocketsSansIOProtocol):
    """uvicorn's WebSocket protocol, closing as the module says after a frame over the limit."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._close_frame: bytes | None = None  # after a frame over the limit: the close frame to send

    def handle_parser_exception(self) -> None:
        if self._close_frame is not None:  # (called again on every read after it: discarded)
            return
        close = self.conn.close_sent
        if close is None or close.code != CloseCode.MESSAGE_TOO_BIG or self.close_sent:
            super().handle_parser_exception()
            return
        # websockets has failed the connection: the close frame (and the end of our side)
        # wait in its output, and it discards what comes in; they are sent after the app's
        # last replies (`send`). The messages read with the frame's first bytes, before it,
        # go to the app first (uvicorn drops them)
        self._close_frame = b"".join(self.conn.data_to_send())
        self.handle_events()
        self.stop_keepalive()
        self.queue.put_nowait({"type": "websocket.disconnect", "code": close.code, "reason": close.reason})
        if self.read_paused:  # read (and discard) on, so that nothing unread resets the socket
            self.read_paused = False
            self.transport.resume_reading()
        # (uvicorn leaves a connection with a close timer to it when the app returns)
        self.close_timer = self.loop.call_later(LINGER, self.transport.abort)

    async def send(self, message: Any) -> None:
        if self._close_frame is None and message["type"] == "websocket.send":
            # (uvicorn's waits for this too, then writes through websockets, which refuses
            # once a frame over the limit has come: it may come during the wait)
            await self.writable.wait()
        if self._close_frame is None:
            await super().send(message)
            return
        await self.writable.wait()  # (the socket's buffer drained: flow control, as uvicorn's)
        if self.disconnected or self.close_sent:
            raise ClientDisconnected
        if message["type"] == "websocket.send":
            data, opcode = message.get("bytes"), Opcode.BINARY
            if data is None:
                data, opcode = message["text"].encode(), Opcode.TEXT
            self.transport.write(Frame(opcode, data).serialize(mask=False, extensions=self.conn.extensions))
        elif message["type"] == "websocket.close":  # the close frame websockets made: 1009, its reason
            self.close_sent = True
            self.transport.write(self._close_frame)
            if self.transport.can_write_eof():
                self.transport.write_eof()  # then the client closes its side, and we ours
        else:
            msg = f"Unexpected ASGI message {message['type']!r} on a connection being closed"
            raise RuntimeError(msg)

    def shutdown(self) -> None:
        if self._close_frame is not None and not self.close_sent:  # the server stops meanwhile
            self.close_sent = True
            self.transport.write(self._close_frame)
            self.transport.close()
            return
        super().shutdown()
