"""RocketMQ release versions: the engine's rules change at particular tags, so a policy carries full versions.

A version is ``(major, minor, patch)`` as in the ``rocketmq-all-<major>.<minor>.<patch>`` tags of apache/rocketmq.
Each rule that depends on a version keeps its boundary next to the rule, with the tag and commit it comes from.
"""

from __future__ import annotations

import re

Version = tuple[int, int, int]

# "Not given": GroupPolicy fills it in (the broker's from broker_major, the client's from the broker's).
UNSET_VERSION: Version = (0, 0, 0)
# The majors the engine has rules for (4.x and 5.x, DESIGN §5).
KNOWN_MAJORS = (4, 5)
# The newest released tag of each major (apache/rocketmq tags, checked 2025-09): what a bare major stands for when
# a caller gives no full version, so rules keyed on a later 5.x tag keep applying to "5" as they did before.
LATEST_RELEASE: dict[int, Version] = {4: (4, 9, 8), 5: (5, 3, 3)}

_VERSION_RE = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?")


def parse_version(text: str) -> Version:
    """``"5.2.0"`` → ``(5, 2, 0)``; ``"5.3"`` means ``5.3.0``. Anything else (``"5"``, ``"5.x"``, suffixes such as
    ``-SNAPSHOT``) is refused: a rule boundary cannot be decided from it."""
    match = _VERSION_RE.fullmatch(text.strip()) if isinstance(text, str) else None
    if match is None:
        raise ValueError(
            f"{text!r} is not a RocketMQ version: write MAJOR.MINOR.PATCH such as '5.2.0' or '4.9.4' "
            f"(MAJOR.MINOR such as '5.3' means '5.3.0')"
        )
    major, minor, patch = match.groups()
    return int(major), int(minor), int(patch or 0)


def format_version(version: Version) -> str:
    return ".".join(str(part) for part in version)


def version_for_major(major: int) -> Version:
    """The version a bare major stands for (its newest release, ``LATEST_RELEASE``)."""
    if major not in LATEST_RELEASE:
        raise ValueError(f"major {major}: the engine has rules for RocketMQ 4.x and 5.x only")
    return LATEST_RELEASE[major]


def check_version(name: str, version: object) -> Version:
    """A ``(major, minor, patch)`` tuple of non-negative ints whose major the engine knows."""
    if (
        not isinstance(version, tuple)
        or len(version) != 3
        or not all(isinstance(part, int) and not isinstance(part, bool) and part >= 0 for part in version)
    ):
        raise ValueError(f"{name} must be a (major, minor, patch) tuple of non-negative ints, got {version!r}")
    if version[0] not in KNOWN_MAJORS:
        raise ValueError(
            f"{name} {format_version(version)}: the engine has rules for RocketMQ 4.x and 5.x only"  # type: ignore[arg-type]
        )
    return version  # type: ignore[return-value]


# --- broker switches that exist only from a release on (§5.9) ----------------------------------------------------
# The configuration refuses a key whose BrokerConfig field the configured broker does not have, and the engine keys
# the behaviour that differs on these tags. Read in apache/rocketmq's BrokerConfig at each tag (and, for 5.5.0,
# in the develop branch after the 5.4.0 release).

# BrokerConfig.enableRetryTopicV2 / retrieveMessageFromPopRetryTopicV1 (both added in rocketmq-all-5.2.0, absent in
# 5.1.4): KeyBuilder.buildPopRetryTopicV2 names pop retry topics %RETRY%<group>+<topic>.
RETRY_TOPIC_V2_SINCE: Version = (5, 2, 0)
# BrokerConfig.popConsumerKVServiceInit / popConsumerKVServiceEnable / popReviveMaxAttemptTimes (added in
# rocketmq-all-5.3.2, absent in 5.3.1; both switches default false): PopConsumerService keeps pop records in RocksDB
# (RIP-73) instead of checkpoints in the revive log topic.
POP_CONSUMER_KV_SERVICE_SINCE: Version = (5, 3, 2)
# BrokerConfig.popReviveSkipIfGroupAbsent (default true): apache/rocketmq PR #9981 ("[ISSUE #9980] Skip invalid
# records when the group is absent in Pop"), merged 2026-01 after rocketmq-all-5.4.0 (released 2025-12-24), so first
# released in rocketmq-all-5.5.0 (2026-04-10). PopConsumerService#revive skips the record of a group without a
# subscription group config.
POP_REVIVE_SKIP_IF_GROUP_ABSENT_SINCE: Version = (5, 5, 0)
