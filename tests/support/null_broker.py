"""The null server: about the cheapest Kafka-protocol peer possible, to measure the load
client's own ceiling (tests/integration/test_client_throughput.py).

A uvloop ``asyncio.Protocol`` in a forked process of its own (pinned to one CPU when asked). It
decodes each request's header and Produce body with the shared codec and answers Produce with
a cached encoded ProduceResponse (error 0, base offset 0), ApiVersions with the brokers' table
and Metadata with one broker (itself) leading every partition of ``TOPIC``; any other API is a
test failure. It stores nothing.
"""

from __future__ import annotations

import asyncio
import multiprocessing as mp
import os

from brokers.core.protocol import api
from brokers.core.protocol.framing import FrameDecoder, frame
from brokers.core.protocol.header import RequestHeader, encode_response_header
from brokers.core.protocol.messages import metadata, produce
from workloads.connection import new_event_loop

TOPIC = "null"
PARTITIONS = 1


class NullProtocol(asyncio.Protocol):
    def __init__(self, port_holder: list[int]) -> None:
        self.decoder = FrameDecoder(1 << 28)
        self.port = port_holder
        self.cache: dict[tuple[int, str, int], list] = {}

    def connection_made(self, transport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        out = []
        for f in self.decoder.feed(data):
            header, pos = RequestHeader.decode(f)
            key, version = header.api_key, header.api_version
            corr = encode_response_header(header.correlation_id)
            if key == api.ApiKey.PRODUCE:
                req = produce.ProduceRequest.decode(f[pos:], version)
                t = req.topic_data[0]
                p = t.partition_data[0].index
                body = self.cache.get((version, t.name, p))
                if body is None:
                    resp = produce.ProduceResponse(
                        responses=[
                            produce.TopicProduceResponse(
                                name=t.name,
                                partition_responses=[
                                    produce.PartitionProduceResponse(
                                        index=p, error_code=0, base_offset=0
                                    )
                                ],
                            )
                        ]
                    )
                    body = self.cache[(version, t.name, p)] = resp.encode(version)
                out += frame([corr, *body])
                continue
            req = api.decode_request(key, version, f[pos:])
            if key == api.ApiKey.API_VERSIONS:
                resp = api.api_versions_response()
            elif key == api.ApiKey.METADATA:
                resp = metadata.MetadataResponse(
                    brokers=[metadata.MetadataResponseBroker(0, "127.0.0.1", self.port[0])],
                    controller_id=0,
                    topics=[
                        metadata.MetadataResponseTopic(
                            0,
                            TOPIC,
                            partitions=[
                                metadata.MetadataResponsePartition(
                                    0, p, 0, replica_nodes=[0], isr_nodes=[0]
                                )
                                for p in range(PARTITIONS)
                            ],
                        )
                    ],
                )
            else:
                raise AssertionError(f"null server: unexpected api {key}")
            out += frame([corr, *api.encode_response(key, version, resp)])
        self.transport.writelines(out)


def _serve(port_q, cpu: int | None) -> None:
    if cpu is not None:
        os.sched_setaffinity(0, {cpu})
    loop = new_event_loop()
    holder = [0]
    server = loop.run_until_complete(
        loop.create_server(lambda: NullProtocol(holder), "127.0.0.1", 0)
    )
    holder[0] = server.sockets[0].getsockname()[1]
    port_q.put(holder[0])
    loop.run_forever()


def start_null_server(cpu: int | None):
    """Fork the server (on ``cpu`` when given); (its process, its port). The caller kills it."""
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    proc = ctx.Process(target=_serve, args=(q, cpu), daemon=True)
    proc.start()
    return proc, q.get(timeout=10)
