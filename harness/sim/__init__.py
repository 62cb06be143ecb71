"""Deterministic simulation of whole brokers: the product's code, unmodified, on virtual time.

Each simulated process (a broker, the load client) runs on an event loop of its own
(``SimLoop``), and one scheduler (``World``) steps whichever loop is due first on one virtual
clock. Nothing sleeps: an idle cluster jumps to its next timer. The loops' networking calls
(``create_server``, ``create_connection``, ``create_datagram_endpoint``) go to an in-memory
network (``SimNetwork``) that delays, drops, duplicates and holds traffic as a seeded fault
schedule says, so the broker's own server, fetcher, replica manager, gossip socket and
coordinator run exactly as they do on real sockets. A run is a function of its seed.

What each fault means here, and why it is faithful:

* pause (SIGSTOP): the process's loop is not stepped; what reaches it waits in its loop, and its
  overdue timers fire together on resume, as a resumed process finds them;
* kill (SIGKILL): the loop is abandoned mid-flight (no cleanup runs) and the peers of its
  connections see them end; the files it wrote stay (a process crash, not a power loss: the
  storage writes with ``pwritev``, so nothing sits in a user-space buffer);
* one-sided cut (a -> b): datagrams a sends b are dropped; bytes on a TCP connection are held
  and arrive when the cut heals (the retransmission a real TCP would do), unless an end gave up
  on the connection meanwhile: stale requests arrive late, as they do after a real partition;
* clock steps: ``time.time`` is the virtual clock plus the running process's own offset.

Layout:
- ``world.py``  the virtual clock, ``SimLoop`` and the ``World`` scheduler (pause, kill, run)
- ``net.py``    ``SimNetwork``: listeners, TCP-like streams, datagrams, cuts, latency, loss
"""
