"""Configuration: documented defaults, strict keys with their path in the message, env var and file handling."""

from __future__ import annotations

import pathlib

import pytest

from rocketmq_retry.config import CONFIG_ENV, FORMAT_NAMES, load_config, parse_config
from rocketmq_retry.engine import FailedDelivery, next_hop
from rocketmq_retry.engine.model import ConsumeMode, CustomizedPolicy, ExponentialPolicy, MessageModel, Protocol
from rocketmq_retry.engine.pop_revive import pop_revive_skip_if_group_absent
from rocketmq_retry.errors import ConfigError


def test_empty_file_gives_documented_defaults(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "empty.yaml"
    path.write_text("")
    cfg = load_config(path)
    assert cfg.timezone == "Asia/Shanghai"
    assert cfg.brokers["default"].version == "4.9.4"
    assert cfg.brokers["default"].message_delay_level == "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"
    assert cfg.sources == []
    assert cfg.compensation.ledger_url == "sqlite:///{warehouse}/compensation.db"
    assert cfg.compensation.lease_seconds == 300
    assert cfg.compensation.max_attempts == 5
    assert [(r.topic, r.group, r.handler) for r in cfg.compensation.routes] == [("*", "*", "log-only")]


def test_unlisted_group_gets_all_defaults() -> None:
    policy = parse_config({}).group_policy("GID_anything")
    assert policy.group == "GID_anything"
    assert policy.broker_major == 4
    assert policy.delay_levels.max_level == 18
    assert (policy.protocol, policy.consume_mode, policy.message_model) == (
        Protocol.REMOTING,
        ConsumeMode.CONCURRENTLY,
        MessageModel.CLUSTERING,
    )
    assert (policy.max_reconsume_times, policy.retry_max_times, policy.suspend_current_queue_time_millis) == (
        -1,
        16,
        1000,
    )
    # Without `next`, CustomizedRetryPolicy keeps its built-in list, whatever the broker's messageDelayLevel (§5.1).
    assert policy.retry_policy == CustomizedPolicy(next_ms=())
    assert (policy.broker_version, policy.client_version) == ((4, 9, 4), (4, 9, 4))
    assert (policy.delay_level_when_next_consume, policy.pop_invisible_time_ms, policy.invisible_duration_ms) == (
        0,
        60_000,
        15_000,
    )
    assert policy.enable_retry_topic_v2 is False


def test_new_keys_have_their_documented_defaults() -> None:
    cfg = parse_config({"groups": {"g": {}}})
    broker, group = cfg.brokers["default"], cfg.groups["g"]
    assert (broker.version, broker.major, broker.release, broker.enable_retry_topic_v2) == (
        "4.9.4",
        4,
        (4, 9, 4),
        False,
    )
    assert (group.client_version, group.delay_level_when_next_consume) == (None, 0)
    assert (group.pop_invisible_time_ms, group.invisible_duration_ms) == (60_000, 15_000)


def test_versions_group_settings_reach_the_policy() -> None:
    cfg = parse_config(
        {
            "brokers": {"b5": {"version": "5.3", "enable_retry_topic_v2": True}},
            "groups": {
                "spring": {"broker": "b5", "client_version": "5.1.1", "delay_level_when_next_consume": -1},
                "pop": {"broker": "b5", "consume_mode": "pop", "pop_invisible_time_ms": 5_000},
                "simple": {
                    "broker": "b5",
                    "protocol": "grpc",
                    "consume_mode": "simple",
                    "invisible_duration_ms": 30_000,
                },
            },
        }
    )
    assert cfg.brokers["b5"].version == "5.3.0"  # "5.3" means 5.3.0
    spring = cfg.group_policy("spring")
    assert (spring.broker_version, spring.client_version, spring.broker_major) == ((5, 3, 0), (5, 1, 1), 5)
    assert (spring.delay_level_when_next_consume, spring.enable_retry_topic_v2) == (-1, True)
    pop = cfg.group_policy("pop")
    assert (pop.client_version, pop.pop_invisible_time_ms) == ((5, 3, 0), 5_000)  # client defaults to the broker's
    assert next_hop(pop, FailedDelivery(0, original_topic="T")).topic == "%RETRY%pop+T"  # enableRetryTopicV2
    assert cfg.group_policy("simple").invisible_duration_ms == 30_000


def test_group_resolves_its_broker_and_policy() -> None:
    cfg = parse_config(
        {
            "brokers": {"fast": {"version": "5.2.0", "message_delay_level": "1s 2s 3s"}},
            "groups": {
                "g": {
                    "broker": "fast",
                    "protocol": "grpc",
                    "retry_max_times": 3,
                    "retry_policy": {"type": "exponential", "initial": 1000, "max": 60000, "multiplier": 3},
                }
            },
        }
    )
    policy = cfg.group_policy("g")
    assert policy.broker_major == 5
    assert policy.delay_levels.levels_ms == (1000, 2000, 3000)
    assert policy.retry_policy == ExponentialPolicy(initial_ms=1000, max_ms=60000, multiplier=3.0)
    assert "default" in cfg.brokers  # unlisted groups still resolve


def test_bounds_of_the_new_keys_are_inclusive() -> None:
    cfg = parse_config(
        {
            "brokers": {"b": {"version": "5.2.0", "enable_retry_topic_v2": True}},  # the first broker with V2
            "groups": {
                "low": {"pop_invisible_time_ms": 5_000, "invisible_duration_ms": 10_000},
                "high": {"pop_invisible_time_ms": 300_000, "invisible_duration_ms": 43_200_000},
            },
        }
    )
    assert cfg.group_policy("low").pop_invisible_time_ms == 5_000
    assert cfg.group_policy("high").invisible_duration_ms == 43_200_000
    assert cfg.brokers["b"].enable_retry_topic_v2 is True


def test_pop_revive_switches_reach_the_policy_at_the_releases_that_have_them() -> None:
    cfg = parse_config(
        {
            "brokers": {
                "kv": {"version": "5.3.2", "pop_consumer_kv_service_enable": True},  # the first broker with it
                "b55": {"version": "5.5.0"},
                "off": {
                    "version": "5.5.0",
                    "pop_consumer_kv_service_enable": True,
                    "pop_revive_skip_if_group_absent": False,
                },
                "old": {"version": "5.3.3"},
            },
            "groups": {name: {"broker": name, "protocol": "grpc"} for name in ("kv", "b55", "off", "old")},
        }
    )
    got = {
        name: (p.pop_consumer_kv_service_enable, pop_revive_skip_if_group_absent(p))
        for name in ("kv", "b55", "off", "old")
        for p in [cfg.group_policy(name)]
    }
    # popReviveSkipIfGroupAbsent defaults to true where it exists (5.5.0) and reads false before
    assert got == {"kv": (True, False), "b55": (False, True), "off": (True, False), "old": (False, False)}
    assert cfg.brokers["b55"].pop_revive_skip_if_group_absent is None  # null = the broker's default


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"bogus": 1}, "bogus: unknown key"),
        ({"groups": {"g": {"max_reconsume_time": 3}}}, "groups.g.max_reconsume_time: unknown key"),
        ({"sources": [{"format": "broker", "path": "x", "zone": "UTC"}]}, "sources[0].zone: unknown key"),
        ({"sources": [{"format": "broker"}]}, "sources[0].path: required key is missing"),
        ({"sources": [{"format": "log4j", "path": "x"}]}, "sources[0].format: Input should be 'rocketmq-client-4x'"),
        (
            {"brokers": {"default": {"message_delay_level": "1s  2s"}}},
            "brokers.default.message_delay_level: level 2 ('') of messageDelayLevel '1s  2s': empty entry",
        ),
        (
            {"brokers": {"default": {"message_delay_level": "1s 2w"}}},
            "brokers.default.message_delay_level: level 2 ('2w') of messageDelayLevel '1s 2w': unknown unit 'w'",
        ),
        ({"brokers": {"default": {"version": "3.2.6"}}}, "brokers.default.version: broker version '3.2.6'"),
        ({"brokers": {"default": {"version": "5"}}}, "brokers.default.version: '5' is not a RocketMQ version"),
        ({"brokers": {"default": {"version": "5.2.0-SNAPSHOT"}}}, "brokers.default.version: '5.2.0-SNAPSHOT' is not"),
        ({"brokers": {"default": {"version": 5.2}}}, "brokers.default.version: 5.2 is not a string: quote the version"),
        (
            {"brokers": {"b": {"version": "5.1.4", "enable_retry_topic_v2": True}}},
            "brokers.b.enable_retry_topic_v2: enable_retry_topic_v2 needs broker 5.2.0 or later "
            "(BrokerConfig.enableRetryTopicV2 does not exist before), but this broker's version is 5.1.4",
        ),
        (
            {"brokers": {"b": {"version": "5.3.1", "pop_consumer_kv_service_enable": True}}},
            "brokers.b.pop_consumer_kv_service_enable: pop_consumer_kv_service_enable needs broker 5.3.2 or later "
            "(BrokerConfig.popConsumerKVServiceEnable does not exist before), but this broker's version is 5.3.1",
        ),
        (
            # false too: the key names a switch the broker must have
            {"brokers": {"b": {"version": "5.4.0", "pop_revive_skip_if_group_absent": False}}},
            "brokers.b.pop_revive_skip_if_group_absent: pop_revive_skip_if_group_absent needs broker 5.5.0 or later "
            "(BrokerConfig.popReviveSkipIfGroupAbsent does not exist before), but this broker's version is 5.4.0",
        ),
        ({"groups": {"g": {"client_version": "5.x"}}}, "groups.g.client_version: '5.x' is not a RocketMQ version"),
        ({"groups": {"g": {"client_version": "3.5.8"}}}, "groups.g.client_version: client version '3.5.8'"),
        (
            {
                "brokers": {"b": {"version": "5.2.0"}},
                "groups": {"g": {"broker": "b", "consume_mode": "pop", "client_version": "4.9.8"}},
            },
            "groups.g.client_version: consume_mode pop needs a 5.x client, not 4.9.8",
        ),
        (
            {"groups": {"g": {"delay_level_when_next_consume": -2}}},
            "groups.g.delay_level_when_next_consume: Input should be greater than or equal to -1",
        ),
        (
            {"groups": {"g": {"pop_invisible_time_ms": 300_001}}},
            "groups.g.pop_invisible_time_ms: 300001 is outside [5000, 300000] ms",
        ),
        (
            {"groups": {"g": {"invisible_duration_ms": 9_999}}},
            "groups.g.invisible_duration_ms: invisible_duration_ms 9999 is outside the proxy's bounds [10000, 4320",
        ),
        (
            {"groups": {"g": {"invisible_duration_ms": 43_200_001}}},
            "groups.g.invisible_duration_ms: invisible_duration_ms 43200001 is outside",
        ),
        ({"groups": {"g": {"broker": "nope"}}}, "groups.g.broker 'nope' is not defined in brokers"),
        ({"groups": {"g": {"protocol": "grpc"}}}, "groups.g: protocol grpc needs a 5.x broker, but broker 'default'"),
        ({"groups": {"g": {"consume_mode": "pop"}}}, "groups.g: consume_mode pop needs a 5.x broker"),
        ({"airflow": {"landing_rot": "/data"}}, "airflow.landing_rot: unknown key"),
        ({"validation": {"severities": 3}}, "validation.severities:"),
        ({"timezone": "Mars/Olympus"}, "timezone: unknown time zone 'Mars/Olympus'"),
        ({"groups": {"g": {"retry_policy": {"type": "exponential", "step": 2}}}}, "groups.g.retry_policy.step"),
        ({"compensation": {"routes": [{"handler": "refund"}]}}, "routes[0].handler 'refund' is not defined"),
        ({"compensation": {"handlers": {"h": {"type": "http"}}}}, "an http handler needs 'url' or 'conn_id'"),
    ],
)
def test_invalid_config_names_key_and_problem(data: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_config(data, "cfg.yaml")
    assert str(err.value).startswith("invalid config cfg.yaml: ")
    assert message in str(err.value)


def test_env_var_is_honoured_and_flag_wins(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env_file = tmp_path / "env.yaml"
    env_file.write_text("timezone: UTC\n")
    flag_file = tmp_path / "flag.yaml"
    flag_file.write_text("timezone: Europe/Berlin\n")
    monkeypatch.setenv(CONFIG_ENV, str(env_file))
    assert load_config().timezone == "UTC"
    assert load_config(flag_file).timezone == "Europe/Berlin"
    monkeypatch.delenv(CONFIG_ENV)
    assert load_config().timezone == "Asia/Shanghai"


def test_missing_file_and_bad_yaml_are_clear(tmp_path: pathlib.Path) -> None:
    with pytest.raises(ConfigError, match=r"config file not found: .*nope\.yaml"):
        load_config(tmp_path / "nope.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("groups:\n  g: [unclosed\n")
    with pytest.raises(ConfigError, match=r"invalid YAML in .*bad\.yaml at line 3"):
        load_config(bad)
    scalar = tmp_path / "scalar.yaml"
    scalar.write_text("just a string\n")
    with pytest.raises(ConfigError, match="the top level must be a mapping, got str"):
        load_config(scalar)


def test_source_glob_substitutes_date() -> None:
    cfg = parse_config({"sources": [{"format": "trace", "path": "traces/{ds}/*trace*", "timezone": "UTC"}]})
    assert cfg.sources[0].glob_for("2026-11-20") == "traces/2026-11-20/*trace*"


def test_format_names_are_the_fixed_design_list() -> None:
    assert FORMAT_NAMES == (
        "rocketmq-client-4x",
        "rocketmq-client-5x",
        "rocketmq-grpc-client",
        "rocketmq-python-client",
        "spring-listener",
        "broker",
        "broker-stats",
        "trace",
        "message-dump",
    )


def test_causes_framework_packages() -> None:
    default = parse_config({}).causes.framework_packages
    assert default == [
        "java.", "javax.", "jdk.", "sun.", "org.apache.rocketmq.", "org.springframework.", "io.grpc.", "io.netty.",
        "ch.qos.logback.", "org.slf4j.", "org.apache.logging.", "com.fasterxml.jackson.", "com.alibaba.fastjson.",
        "com.zaxxer.hikari.", "com.mysql.cj.", "com.google.common.",
    ]  # fmt: skip
    # a package is matched with its sub-packages only: the dot is added when missing
    cfg = parse_config({"causes": {"framework_packages": ["com.acme.lib", "org.jboss."]}})
    assert cfg.causes.framework_packages == ["com.acme.lib.", "org.jboss."]
    with pytest.raises(ConfigError, match=r"causes\.framework_packages: not a Java package name: 'com acme'"):
        parse_config({"causes": {"framework_packages": ["com acme"]}})
    with pytest.raises(ConfigError, match=r"causes\.framework_package: unknown key"):
        parse_config({"causes": {"framework_package": []}})
