"""One error taxonomy for the whole project, with Kafka wire codes in a single registry.

Three families, each handled in one place (plus ``BrokerHalted``, the broker's own decision to
stop, which the CLI reports like a UserError but with exit status 1):

* ``KafkaError`` subclasses carry a Kafka wire ``code``. Request handlers raise them and the
  server turns them into the error field of the response; clients map received codes back with
  ``error_for_code``. ``retriable`` follows the Kafka protocol's own classification, so the load
  client knows when to refresh metadata and retry instead of failing the run.
* ``ProtocolViolation`` means the byte stream itself cannot be trusted (bad framing, a header we
  cannot parse). The only safe answer is to log it and close that one connection.
* ``UserError`` is a mistake by the person at the keyboard (bad CLI argument, bad workload file).
  The CLI prints its message as one line and exits 2, never a traceback. It and the root
  ``TwinbenchError`` are defined in ``twinbench_common/errors.py`` (the analysis imports them
  from there) and re-exported here.
"""

from __future__ import annotations

from typing import ClassVar

# Defined where the analysis can import them without importing broker code.
from twinbench_common.errors import TwinbenchError as TwinbenchError
from twinbench_common.errors import UserError as UserError


class BrokerHalted(TwinbenchError):
    """The broker stopped itself because it cannot go on safely (its data directory failed);
    the CLI prints the message as one line and exits 1."""


class ProtocolViolation(TwinbenchError):
    """The peer broke framing or sent bytes we cannot parse; close the connection."""


class FrameTooLarge(ProtocolViolation):
    """A length prefix above the configured maximum (checked before any allocation)."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"frame of {size} bytes exceeds the limit of {limit} bytes")
        self.size = size
        self.limit = limit


class KafkaError(TwinbenchError):
    """An error with a Kafka wire code. Subclasses set ``code`` and ``retriable``."""

    code: ClassVar[int] = -1
    retriable: ClassVar[bool] = False
    # The spec's upper-snake name, used in log lines and by clients' error tables.
    wire_name: ClassVar[str] = "UNKNOWN_SERVER_ERROR"

    def __init__(self, message: str = "") -> None:
        super().__init__(message or self.wire_name)
        self.message = message


_REGISTRY: dict[int, type[KafkaError]] = {}


def _wire(code: int, wire_name: str, *, retriable: bool = False):
    """Class decorator: give a KafkaError subclass its wire code and register it once."""

    def register(cls: type[KafkaError]) -> type[KafkaError]:
        if code in _REGISTRY:
            raise RuntimeError(f"wire code {code} registered twice")
        cls.code = code
        cls.wire_name = wire_name
        cls.retriable = retriable
        _REGISTRY[code] = cls
        return cls

    return register


def error_for_code(code: int) -> type[KafkaError] | None:
    """The error class for a wire code; None for 0 (no error). Unknown codes map to -1."""
    if code == 0:
        return None
    return _REGISTRY.get(code, UnknownServerError)


# The registry. Codes and retriability from the Kafka protocol guide's error table.
@_wire(-1, "UNKNOWN_SERVER_ERROR")
class UnknownServerError(KafkaError): ...


@_wire(1, "OFFSET_OUT_OF_RANGE")
class OffsetOutOfRange(KafkaError): ...


@_wire(2, "CORRUPT_MESSAGE", retriable=True)
class CorruptMessage(KafkaError): ...


@_wire(3, "UNKNOWN_TOPIC_OR_PARTITION", retriable=True)
class UnknownTopicOrPartition(KafkaError): ...


@_wire(4, "INVALID_FETCH_SIZE")
class InvalidFetchSize(KafkaError): ...


@_wire(5, "LEADER_NOT_AVAILABLE", retriable=True)
class LeaderNotAvailable(KafkaError): ...


@_wire(6, "NOT_LEADER_OR_FOLLOWER", retriable=True)
class NotLeaderOrFollower(KafkaError): ...


@_wire(7, "REQUEST_TIMED_OUT", retriable=True)
class RequestTimedOut(KafkaError): ...


@_wire(10, "MESSAGE_TOO_LARGE")
class MessageTooLarge(KafkaError): ...


@_wire(12, "OFFSET_METADATA_TOO_LARGE")
class OffsetMetadataTooLarge(KafkaError): ...


@_wire(14, "COORDINATOR_LOAD_IN_PROGRESS", retriable=True)
class CoordinatorLoadInProgress(KafkaError): ...


@_wire(15, "COORDINATOR_NOT_AVAILABLE", retriable=True)
class CoordinatorNotAvailable(KafkaError): ...


@_wire(16, "NOT_COORDINATOR", retriable=True)
class NotCoordinator(KafkaError): ...


@_wire(17, "INVALID_TOPIC_EXCEPTION")
class InvalidTopic(KafkaError): ...


@_wire(18, "RECORD_LIST_TOO_LARGE")
class RecordListTooLarge(KafkaError): ...


# acks=-1 refused before the append: the ISR is smaller than min.insync.replicas.
@_wire(19, "NOT_ENOUGH_REPLICAS", retriable=True)
class NotEnoughReplicas(KafkaError): ...


# The batch is in the leader's log, but the ISR shrank below min.insync.replicas before it
# was replicated: the client retries (an idempotent producer's retry is deduplicated).
@_wire(20, "NOT_ENOUGH_REPLICAS_AFTER_APPEND", retriable=True)
class NotEnoughReplicasAfterAppend(KafkaError): ...


@_wire(21, "INVALID_REQUIRED_ACKS")
class InvalidRequiredAcks(KafkaError): ...


@_wire(22, "ILLEGAL_GENERATION")
class IllegalGeneration(KafkaError): ...


@_wire(23, "INCONSISTENT_GROUP_PROTOCOL")
class InconsistentGroupProtocol(KafkaError): ...


@_wire(24, "INVALID_GROUP_ID")
class InvalidGroupId(KafkaError): ...


@_wire(25, "UNKNOWN_MEMBER_ID")
class UnknownMemberId(KafkaError): ...


@_wire(26, "INVALID_SESSION_TIMEOUT")
class InvalidSessionTimeout(KafkaError): ...


@_wire(27, "REBALANCE_IN_PROGRESS")
class RebalanceInProgress(KafkaError): ...


@_wire(28, "INVALID_COMMIT_OFFSET_SIZE")
class InvalidCommitOffsetSize(KafkaError): ...


@_wire(32, "INVALID_TIMESTAMP")
class InvalidTimestamp(KafkaError): ...


@_wire(33, "UNSUPPORTED_SASL_MECHANISM")
class UnsupportedSaslMechanism(KafkaError): ...


@_wire(34, "ILLEGAL_SASL_STATE")
class IllegalSaslState(KafkaError): ...


@_wire(35, "UNSUPPORTED_VERSION")
class UnsupportedVersion(KafkaError): ...


@_wire(36, "TOPIC_ALREADY_EXISTS")
class TopicAlreadyExists(KafkaError): ...


@_wire(37, "INVALID_PARTITIONS")
class InvalidPartitions(KafkaError): ...


@_wire(38, "INVALID_REPLICATION_FACTOR")
class InvalidReplicationFactor(KafkaError): ...


@_wire(39, "INVALID_REPLICA_ASSIGNMENT")
class InvalidReplicaAssignment(KafkaError): ...


@_wire(40, "INVALID_CONFIG")
class InvalidConfig(KafkaError): ...


@_wire(41, "NOT_CONTROLLER", retriable=True)
class NotController(KafkaError): ...


@_wire(42, "INVALID_REQUEST")
class InvalidRequest(KafkaError): ...


@_wire(44, "POLICY_VIOLATION")
class PolicyViolation(KafkaError): ...


@_wire(45, "OUT_OF_ORDER_SEQUENCE_NUMBER")
class OutOfOrderSequenceNumber(KafkaError): ...


@_wire(47, "INVALID_PRODUCER_EPOCH")
class InvalidProducerEpoch(KafkaError): ...


@_wire(48, "INVALID_TXN_STATE")
class InvalidTxnState(KafkaError): ...


@_wire(49, "INVALID_PRODUCER_ID_MAPPING")
class InvalidProducerIdMapping(KafkaError): ...


@_wire(50, "INVALID_TRANSACTION_TIMEOUT")
class InvalidTransactionTimeout(KafkaError): ...


@_wire(51, "CONCURRENT_TRANSACTIONS", retriable=True)
class ConcurrentTransactions(KafkaError): ...


@_wire(52, "TRANSACTION_COORDINATOR_FENCED")
class TransactionCoordinatorFenced(KafkaError): ...


@_wire(55, "OPERATION_NOT_ATTEMPTED")
class OperationNotAttempted(KafkaError): ...


@_wire(56, "KAFKA_STORAGE_ERROR", retriable=True)
class KafkaStorageError(KafkaError): ...


@_wire(54, "SECURITY_DISABLED")
class SecurityDisabled(KafkaError): ...


@_wire(58, "SASL_AUTHENTICATION_FAILED")
class SaslAuthenticationFailed(KafkaError): ...


@_wire(68, "NON_EMPTY_GROUP")
class NonEmptyGroup(KafkaError): ...


@_wire(69, "GROUP_ID_NOT_FOUND")
class GroupIdNotFound(KafkaError): ...


@_wire(74, "FENCED_LEADER_EPOCH", retriable=True)
class FencedLeaderEpoch(KafkaError): ...


@_wire(75, "UNKNOWN_LEADER_EPOCH", retriable=True)
class UnknownLeaderEpoch(KafkaError): ...


@_wire(79, "MEMBER_ID_REQUIRED")
class MemberIdRequired(KafkaError): ...


@_wire(81, "GROUP_MAX_SIZE_REACHED")
class GroupMaxSizeReached(KafkaError): ...


@_wire(82, "FENCED_INSTANCE_ID")
class FencedInstanceId(KafkaError): ...


@_wire(86, "GROUP_SUBSCRIBED_TO_TOPIC")
class GroupSubscribedToTopic(KafkaError): ...


@_wire(87, "INVALID_RECORD")
class InvalidRecord(KafkaError): ...


@_wire(88, "UNSTABLE_OFFSET_COMMIT", retriable=True)
class UnstableOffsetCommit(KafkaError): ...


@_wire(90, "PRODUCER_FENCED")
class ProducerFenced(KafkaError): ...


@_wire(100, "UNKNOWN_TOPIC_ID", retriable=True)
class UnknownTopicId(KafkaError): ...
