"""Listener security shared by both twins: TLS, and SASL (PLAIN, SCRAM-SHA-256/512).

A PLAINTEXT listener never touches this package: its connections are the server's plain
``ServerConnection`` and its hot path is unchanged. An SSL listener differs only in the socket
(the event loop's TLS transport, built from ``tls.py``). A SASL listener's connections are
``SaslServerConnection``: every frame goes to a per-connection ``SaslSession`` until the
client has authenticated, then straight to the dispatcher as on any other listener.

Layout (one concept per module):
- ``listeners.py``     SecurityProtocol and Listener: ``SASL_SSL://127.0.0.1:9093`` parsed
- ``tls.py``           ssl.SSLContext for the server (PEM certificate chain, key, optional CA
                       for client certificates) and for the harness's own clients
- ``secret_file.py``   reading a file that holds secrets: size-bounded, refused when other
                       users may read it
- ``credentials.py``   the credentials file (``user=password`` lines) and what the broker keeps
                       of it: PLAIN passwords, SCRAM salted keys per mechanism
- ``scram.py``         SCRAM-SHA-256/512 (RFC 5802, RFC 7677): server and client exchanges,
                       sans-IO, on hashlib.pbkdf2_hmac and hmac
- ``plain.py``         SASL PLAIN (RFC 4616), server side and the client's token
- ``mechanisms.py``    the ServerMechanism Protocol and the registry of enabled mechanisms
- ``sasl_session.py``  the per-connection SASL state machine (Kafka's handshake, then
                       SaslAuthenticate or v0 bare tokens): frames in, actions out, no I/O
- ``connection.py``    SaslServerConnection: the asyncio side of one SASL connection
- ``client.py``        a client's side: ClientSecurity (settings, TLS context, librdkafka
                       properties) and SaslClientExchange (the client's half, sans-IO)
"""
