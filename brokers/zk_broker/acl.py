"""ZooKeeper digest authentication and the ACL every znode of the cluster gets.

With a credential (``--zk-auth-file``, one ``user:password`` line, mode 0600; Kafka's
``zookeeper.set.acl=true`` with a digest login), both of the broker's sessions authenticate
(``addauth digest``) and every znode the broker creates carries two entries: all permissions
for the brokers' digest identity, READ for anyone. So a ZooKeeper client without the
credential can still read broker, topic, partition-state and offset znodes (the harness's
observers, zkCli, a test) but cannot create, change or delete them. Without a credential
znodes stay open, as before (Kafka's default).

The digest is ZooKeeper's own (base64 of SHA-1 over ``user:password``), computed by kazoo's
``make_digest_acl``; nothing here hashes by hand.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from kazoo.security import ACL, READ_ACL_UNSAFE, make_digest_acl

from brokers.core.errors import UserError
from brokers.core.security.secret_file import read_secret_file

SCHEME = "digest"


@dataclass(frozen=True)
class ZkDigest:
    user: str
    password: str = field(repr=False)

    @classmethod
    def parse(cls, text: str, source: str = "ZooKeeper credential") -> ZkDigest:
        user, sep, password = text.strip().partition(":")
        if not sep or not user or not password or "\n" in password:
            raise UserError(f"{source}: expected one line user:password")
        return cls(user, password)

    @property
    def credential(self) -> str:
        """What ``addauth digest`` sends."""
        return f"{self.user}:{self.password}"

    def acl(self) -> list[ACL]:
        """Every permission for this identity, READ for the world."""
        return [make_digest_acl(self.user, self.password, all=True), *READ_ACL_UNSAFE]


def load_digest(path: str | Path) -> ZkDigest:
    data = read_secret_file(path, "ZooKeeper credential file", 4096)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise UserError(f"ZooKeeper credential file {path} is not UTF-8") from None
    return ZkDigest.parse(text, f"ZooKeeper credential file {path}")
