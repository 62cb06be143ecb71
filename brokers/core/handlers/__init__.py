"""Request handlers: one module per family of Kafka APIs, all sharing one ``BrokerContext``.

Layout:
- ``context.py``   BrokerContext (config, coordinator, storage, groups, notifier) and the
                   leadership checks every data-path handler uses
- ``dispatch.py``  RequestDispatcher: header, version check, body decoding (the protocol's
                   REQUESTS registry), routing, response framing
- ``produce.py``   Produce v3-9 (acks 0/1/-1): batches checked by their headers and stored as
                   sent; records are never decoded; idempotent producers' retries are
                   answered from the partition's producer table. Produce v0-2 is answered
                   UNSUPPORTED_VERSION here too (decoded only to name its partitions)
- ``fetch.py``     Fetch (long-poll with min/max bytes; read_committed capped at the last
                   stable offset, with the aborted transactions listed)
- ``metadata.py``  Metadata (with auto-creation), CreateTopics (with topic configs and
                   manual replica assignments), CreatePartitions, DeleteTopics, topic-name rules
- ``configs.py``   DescribeConfigs, AlterConfigs, IncrementalAlterConfigs: topic configs and
                   the broker's settings (read-only)
- ``offsets.py``   ListOffsets, DeleteRecords, OffsetCommit, OffsetFetch
- ``replication.py`` OffsetForLeaderEpoch (a returning replica's truncation point)
- ``groups.py``    FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup, ListGroups,
                   DescribeGroups, DeleteGroups, OffsetDelete
- ``admin.py``     ApiVersions (the advertised table; an unknown ApiVersions version gets the
                   dispatcher's KIP-511 fallback), InitProducerId, the ACL APIs
                   (SECURITY_DISABLED)
- ``transactions.py`` WriteTxnMarkers (a transaction's commit or abort marker per partition)
- ``sasl.py``      SaslHandshake and SaslAuthenticate outside a SASL exchange (plaintext and
                   TLS listeners, authenticated connections): ILLEGAL_SASL_STATE

A handler takes (context, ``Call``: API version, client id and peer address, decoded request)
and returns a response message, an awaitable of one, or None (acks=0). Errors a client must see
become error codes inside the response; nothing a client sends can raise out of a handler
except ProtocolViolation.
"""

from brokers.core.handlers.context import BrokerContext
from brokers.core.handlers.dispatch import RequestDispatcher

__all__ = ["BrokerContext", "RequestDispatcher"]
