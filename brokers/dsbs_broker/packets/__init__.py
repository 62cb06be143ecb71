"""The gossip datagram: its bytes, its tag and its packet number (sans-IO, pure).

The lowest layer of the twin: it imports nothing else of it, and everything above reads and
writes the records its codec defines.

* ``wire.py``    versioned binary codec of gossip datagrams (<= ``MAX_PACKET_BYTES``, 1400) and
                 the records every table holds; ``WireError`` is the only error junk can raise.
                 A header flag marks an HMAC-tagged packet.
* ``auth.py``    the cluster key file and ``Authenticator``: HMAC-SHA256 tags (128 bits) on
                 every datagram, checked before decoding.
* ``replay.py``  ``ReplayWindows``: per-sender anti-replay windows over packet numbers.
"""
