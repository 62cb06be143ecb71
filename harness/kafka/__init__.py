"""Real Apache Kafka beside the twins: the releases the harness pins, resolved from Maven.

Kafka is published to Maven Central as artifacts, not as the release tarball, so the harness
resolves each pinned release's runtime (the broker, the perf tools, a logging backend) from a
dependency-only POM kept here, into a cache in the checkout that git ignores. Nothing of
Kafka's sources or scripts is copied: the harness starts the JVMs itself (docs/real-kafka.md).

Layout:
- ``releases.py``  the pinned releases: version, coordination modes, logging stack, POM
- ``resolve.py``   ``python -m harness.kafka.resolve`` (run by `make setup`): Maven once per
                   release, a stamp so a second run resolves nothing
- ``node.py``      one node's properties, logging configuration, KRaft formatting and java
                   command line (the kafka-zk and kafka-kraft entries plan them)
- ``poms/``        one dependency-only POM per release
"""
