"""The deployment simulated when the configuration names no consumer groups (``simulate`` without ``--config``).

The two texts are exactly ``examples/rocketmq-retry.yaml`` and ``examples/simulate-scenario.yaml`` (a test keeps
them equal), so ``rocketmq-retry simulate --date D --out L`` writes every format out of the box.
"""

from __future__ import annotations

import yaml

from rocketmq_retry.config import Config, parse_config
from rocketmq_retry.simulate.scenario import GroupScenario, _group_scenario

DEMO_CONFIG_YAML = """# Configuration of the committed example landing (examples/landing) and of `make demo`.
# Two brokers: a 4.9.4 broker for the remoting 4.x clients, and a 5.2.0 broker (+ proxy) for the
# 5.x remoting and gRPC clients.
timezone: Asia/Shanghai
brokers:
  default:
    version: "4.9.4"
  v5:
    version: "5.2.0"
groups:
  # --- 4.9.4 broker, 4.x remoting clients ---
  GID_order_fulfilment: {}                       # all defaults: concurrent, max 16 → 17 deliveries before the DLQ
  GID_inventory_reserve: {max_reconsume_times: 3}
  GID_refund_validator: {max_reconsume_times: 3, delay_level_when_next_consume: -1}  # straight to the DLQ
  GID_coupon_audit: {max_reconsume_times: 3, delay_level_when_next_consume: 2}      # every retry at level 2
  GID_cache_node: {message_model: broadcasting}
  GID_order_state_machine: {consume_mode: orderly, max_reconsume_times: 2}
  GID_welcome_email: {max_reconsume_times: 2}
  GID_crm_sync: {}
  GID_invoice_mailer: {max_reconsume_times: 3}   # a Spring Boot application (rocketmq-spring) with two containers:
  GID_invoice_reminder: {max_reconsume_times: 2} # the second one (same JVM, same app.log and rocketmq_client.log)
  GID_invoice_archive: {}                        # a plain 4.x consumer of the Spring application's topic, elsewhere
  # --- 5.2.0 broker ---
  GID_points_accrual: {broker: v5, max_reconsume_times: 4}
  GID_loyalty_spring: {broker: v5, max_reconsume_times: 3}
  GID_shipping_pop: {broker: v5, consume_mode: pop, max_reconsume_times: 3, client_version: "5.3.1"}  # drops over-max
                                                 # copies on arrival (processPopResult, client 5.3.1+)
  GID_risk_scoring: {broker: v5, protocol: grpc, retry_max_times: 4}
  GID_settlement_fifo:
    broker: v5
    protocol: grpc
    consume_mode: orderly
    retry_max_times: 3
    topics: [SETTLEMENT_BATCH]                   # its subscription: the gRPC SDK's lines never name a topic
    retry_policy: {type: exponential, initial: 1000, max: 60000, multiplier: 2}
  GID_audit_simple: {broker: v5, protocol: grpc, consume_mode: simple, retry_max_times: 2}
sources:
  # application hosts are named <broker key>-<app>-NN: "default-*" run 4.x clients, "v5-*" 5.x and gRPC clients
  - {format: rocketmq-client-4x, path: "default-*/logs/rocketmqlogs/rocketmq_client*.log*", timezone: Asia/Shanghai}
  - {format: rocketmq-client-5x, path: "v5-*/logs/rocketmqlogs/**/rocketmq_client*.log*"}
  # No source names a consumer group: lines that do not name theirs (rocketmq-spring's "consume message failed",
  # the gRPC SDK's listener exception, the 4.x broadcasting drop) get it from their own host's evidence: the
  # running-container line, the consume thread, the RocketMQ client log (docs/reconstruction.md, "Attribution").
  - {format: rocketmq-grpc-client, path: "v5-*/logs/rocketmq/rocketmq-client*.log*"}
  - {format: spring-listener, path: "*/logs/app.log*", timezone: Asia/Shanghai}
  - {format: broker, path: "rmq-broker-*/logs/rocketmqlogs/**/broker*.log*"}
  - {format: broker-stats, path: "rmq-broker-*/logs/rocketmqlogs/**/stats*.log*"}
  - {format: trace, path: "trace/*.trace*"}
  - {format: message-dump, path: "dumps/*.jsonl*"}
"""

DEMO_SCENARIO_YAML = """# Listener behaviour per consumer group for `rocketmq-retry simulate --scenario`;
# the retry rules themselves come from the engine.
# behaviour weights: ok | always (fails every delivery) | sometimes (fails half of them)
#                    | until (fails until the k-th retry, k drawn from 1..4)
# failure_kinds weights: later (RECONSUME_LATER) | exception (listener throws) | null (returns null)
groups:
  GID_order_fulfilment: {topic: ORDER_PAID, tags: paid, behaviour: {ok: 0.7, always: 0.2, until: 0.1},
                         failure_kinds: {later: 0.9, exception: 0.1}}
  GID_inventory_reserve: {topic: ORDER_CREATED, tags: created, behaviour: {ok: 0.6, always: 0.2, sometimes: 0.2}}
  GID_refund_validator: {topic: REFUND_REQUESTED, tags: refund, key_prefix: RFD, delay_level: -1,
                         behaviour: {ok: 0.7, always: 0.3}, failure_kinds: {later: 1.0}}
  GID_coupon_audit: {topic: COUPON_APPLIED, tags: coupon, key_prefix: CPN, delay_level: 2,
                     behaviour: {ok: 0.6, always: 0.4}, failure_kinds: {later: 1.0}}
  GID_cache_node: {topic: CACHE_INVALIDATE, tags: sku, key_prefix: SKU, instances: 2,
                   behaviour: {ok: 0.7, always: 0.3}, failure_kinds: {later: 1.0}}
  GID_order_state_machine: {topic: ORDER_STATUS_SEQ, tags: STATUS, behaviour: {ok: 0.7, always: 0.15, until: 0.15},
                            failure_kinds: {later: 0.6, exception: 0.4}}
  GID_welcome_email: {topic: USER_REGISTERED, tags: signup, key_prefix: USR, behaviour: {ok: 0.5, always: 0.5}}
  GID_crm_sync: {topic: USER_REGISTERED, tags: signup, key_prefix: USR, behaviour: {ok: 1.0}}
  # one Spring Boot application (host default-invoice-mailer-01) running two rocketmq-spring containers
  GID_invoice_mailer: {topic: INVOICE_ISSUED, tags: pdf, key_prefix: INV, app: spring, application: invoice-mailer,
                       behaviour: {ok: 0.6, until: 0.3, always: 0.1}}
  GID_invoice_reminder: {topic: INVOICE_OVERDUE, tags: overdue, key_prefix: INV, app: spring,
                         application: invoice-mailer, behaviour: {ok: 0.6, always: 0.4}}
  # a plain consumer of the same topic on its own host: INVOICE_ISSUED alone does not tell the two groups apart
  GID_invoice_archive: {topic: INVOICE_ISSUED, tags: pdf, key_prefix: INV, behaviour: {ok: 0.7, until: 0.3},
                        failure_kinds: {later: 0.8, exception: 0.2}}
  GID_points_accrual: {topic: POINTS_EARNED, tags: points, key_prefix: PTS,
                       behaviour: {ok: 0.6, always: 0.2, sometimes: 0.2}}
  GID_loyalty_spring: {topic: LOYALTY_TIER_CHANGED, tags: tier, key_prefix: LOY, app: spring,
                       behaviour: {ok: 0.6, always: 0.2, until: 0.2}}
  GID_shipping_pop: {topic: SHIPMENT_REQUESTED, tags: express, key_prefix: SHP, behaviour: {ok: 0.6, always: 0.4}}
  GID_risk_scoring: {topic: PAYMENT_CAPTURED, tags: captured, key_prefix: PAY,
                     behaviour: {ok: 0.6, always: 0.2, until: 0.2}}
  GID_settlement_fifo: {topic: SETTLEMENT_BATCH, tags: batch, key_prefix: STL,
                        behaviour: {ok: 0.6, always: 0.2, until: 0.2}}
  GID_audit_simple: {topic: AUDIT_EVENT, tags: audit, key_prefix: AUD, behaviour: {ok: 0.7, always: 0.3}}
"""


def demo_config(timezone: str | None = None) -> Config:
    data = yaml.safe_load(DEMO_CONFIG_YAML)
    if timezone:
        data["timezone"] = timezone
    return parse_config(data, "(built-in demo deployment)")


def demo_scenario() -> dict[str, GroupScenario]:
    groups = yaml.safe_load(DEMO_SCENARIO_YAML)["groups"]
    return {name: _group_scenario(name, spec, f"demo scenario: groups.{name}") for name, spec in groups.items()}
