"""kombu's filesystem transport (the demo's broker), with each message written whole before a worker
can see it.

kombu 5.7 creates a message's file in the queue folder and then writes it; a worker listing the folder
in between moves and reads an empty file and dies ("Unrecoverable error: JSONDecodeError"), which
stopped `make demo` after some minutes (its beat sends tasks every minute). Here a message is written
under a name the worker does not take (it reads only `<name>.<queue>.msg`) and then renamed into place:
a rename within one folder is atomic."""

from __future__ import annotations

import os
import uuid
from time import monotonic

from kombu.exceptions import ChannelError
from kombu.transport import filesystem
from kombu.utils.encoding import str_to_bytes
from kombu.utils.json import dumps


class Channel(filesystem.Channel):
    def _put(self, queue, payload, **kwargs):
        # the same name and order as kombu's (milliseconds first); the hidden partial name ends in .part
        name = f"{int(round(monotonic() * 1000))}_{uuid.uuid4()}.{queue}.msg"
        final = os.path.join(self.data_folder_out, name)
        partial = os.path.join(self.data_folder_out, f".{name}.part")
        try:
            with open(partial, "wb") as f:
                f.write(str_to_bytes(dumps(payload)))
            os.replace(partial, final)
        except OSError as exc:
            raise ChannelError(f"Cannot add file {final!r} to directory") from exc


class Transport(filesystem.Transport):
    Channel = Channel
