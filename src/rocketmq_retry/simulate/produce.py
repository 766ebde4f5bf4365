"""Producing: a day-shaped schedule of business messages, each send (retries planned by the engine and logged as
each producer flavour logs them), the store of the business copy, its publish trace, and a lifecycle per consumer
group (per instance when broadcasting) that reads the topic.
"""

from __future__ import annotations

import datetime as _dt
import json

from rocketmq_retry.engine import (
    SendAttemptResult,
    SendOutcome,
    SendPlan,
    plan_grpc_send,
    plan_remoting_send,
)
from rocketmq_retry.logformats import java, layouts, statements, trace
from rocketmq_retry.logformats.statements import fill
from rocketmq_retry.simulate import world
from rocketmq_retry.simulate.consume import Consumer
from rocketmq_retry.simulate.context import Part, SimContext
from rocketmq_retry.simulate.javanames import C_PRODUCER, FRAMES_SEND, G_PRODUCER
from rocketmq_retry.simulate.model import CLIENT_5X, GRPC, Message, Producer
from rocketmq_retry.simulate.truth import Truth

SEND_ATTEMPTS = 3  # per send: remoting retryTimesWhenSendFailed (2) + 1, the gRPC SDK's maxAttempts (3)


class Publishing(Part):
    def __init__(self, ctx: SimContext, truth: Truth, consumer: Consumer) -> None:
        super().__init__(ctx)
        self.truth = truth
        self.consumer = consumer

    def schedule(self, days: list[tuple[_dt.date, int, int]]) -> None:
        """``--messages`` per date, each date shaped alike; message numbers run on across dates (business keys
        stay unique), order ids restart per date (they carry it)."""
        topics = sorted({g.scenario.topic for g in self.topo.groups})
        extra = self.s.messages * len(days)  # burst messages are numbered after every date's regular ones
        for index, (day, day_start, day_end) in enumerate(days):
            span = day_end - day_start
            for i in range(self.s.messages):
                n = index * self.s.messages + i
                topic = topics[n % len(topics)]
                # A day shape: quiet night, busy daytime; 3 % land in the last 3 minutes, so their lifecycles (and
                # any retries) cross midnight.
                u = self.rng.random()
                late = self.rng.random() < 0.03
                frac = 0.998 + 0.002 * u if late else (u + 0.35 * _bump(self.rng.random())) / 1.35
                self.loop.at(day_start + int(frac * span), self._publish, topic, n, day, i)
            extra = self._schedule_bursts(day, day_start, extra)

    def _schedule_bursts(self, day: _dt.date, day_start: int, n: int) -> int:
        """A throttling group's traffic burst (scenario ``throttle.burst``): that many more messages a minute on
        its topic inside the window, numbered from ``n``; returns the next number."""
        for g in self.topo.groups:
            w = g.scenario.throttle
            if w is None or w.burst <= 0:
                continue
            lo = day_start + w.start_minute * 60_000
            count = int(w.burst * w.minutes)
            for k in range(count):
                at = lo + int((k + self.rng.random()) * w.minutes * 60_000 / count)
                # order ids of a date are ORD-<yymmdd><5 digits>: the burst's follow the date's regular ones
                self.loop.at(at, self._publish, g.scenario.topic, n, day, self.s.messages + k)
                n += 1
        return n

    def _publish(self, topic: str, n: int, day: _dt.date, i: int) -> None:
        p = self.topo.producers[topic]
        scen = next(g.scenario for g in self.topo.groups if g.scenario.topic == topic)
        t0 = self.loop.now
        msg = self._message(p, topic, n, t0, day, i)
        broker = p.broker
        plan = self._send_plan(p, t0)
        self._log_send_attempts(p, msg, plan, broker)
        self.truth.publish(
            msg.uniq_key, topic, msg.keys, scen.tags, msg.order_id, p.group, t0, len(plan.attempts), plan.succeeded
        )
        if not plan.succeeded:
            return
        last = plan.attempts[-1]
        store_at = last.at_ms + max(1, last.result.rt_ms // 2)
        self.loop.at(store_at, self._store_business, msg, broker, last.result.rt_ms)

    def _message(self, p: Producer, topic: str, n: int, t0: int, day: _dt.date, i: int) -> Message:
        """Message ``n`` of the run (``i`` of its date ``day``): an order event with its keys, id and queue."""
        scen = next(g.scenario for g in self.topo.groups if g.scenario.topic == topic)
        inst = p.instance
        order = f"ORD-{day:%y%m%d}{i:05d}"
        key = f"{scen.key_prefix}-{n + 100001}"
        payload = {
            "orderId": order,
            "userId": f"U-{self.rng.randint(100, 99999)}",
            "amount": round(self.rng.uniform(1, 999), 2),
            "currency": "CNY",
            "event": topic.lower(),
        }
        poison = self._poison(topic)
        if poison:
            payload = _poisoned(payload, poison)
        body = (
            ";".join(f"{k}={v}" for k, v in payload.items())
            if poison == "json"
            else json.dumps(payload, separators=(",", ":"))
        ).encode("utf-8")
        # the order id travels in the body and in KEYS (a second key when the topic has its own business key)
        keys = order if scen.key_prefix == "ORD" else f"{key} {order}"
        # remoting producers set UNIQ_KEY with MessageClientIDSetter; the gRPC SDK uses its MessageIdCodec ids
        uniq = inst.host.next_grpc_message_id(t0) if p.kind == GRPC else inst.host.next_uniq_key(t0)
        queue = (
            (n % world.BUSINESS_QUEUES)
            if not any(g.orderly for g in self.topo.groups if g.scenario.topic == topic)
            else int(order[-2:]) % world.BUSINESS_QUEUES
        )
        return Message(uniq, topic, scen.tags, keys, order, body, queue, p, t0 + inst.host.skew_ms, poison=poison)

    def _poison(self, topic: str) -> str:
        """The poison cause this message is published with ("" for a good one): drawn only for a topic one of whose
        groups declares ``poison`` (the first such group's share and cause)."""
        group = next((g for g in self.topo.groups if g.scenario.topic == topic and g.scenario.poison > 0), None)
        if group is None:
            return ""
        return group.scenario.poison_cause if self.rng.random() < group.scenario.poison else ""

    def _send_plan(self, p: Producer, t0: int) -> SendPlan:
        """Each attempt's result (``--producer-fault-rate``), then the engine's plan of the producer's retries."""
        results = []
        for _ in range(SEND_ATTEMPTS):
            if self.rng.random() < self.s.producer_fault_rate:
                results.append(SendAttemptResult(SendOutcome.REMOTING_ERROR, rt_ms=self.rng.randint(2, 12)))
            else:
                results.append(SendAttemptResult(SendOutcome.SEND_OK, rt_ms=self.rng.randint(1, 9)))
        if p.kind == GRPC:
            return plan_grpc_send(results, start_ms=t0)
        return plan_remoting_send(results, client_major=p.broker.major, start_ms=t0)

    def _log_send_attempts(self, p: Producer, msg: Message, plan: SendPlan, broker: world.Broker) -> None:
        inst = p.instance
        line = self.writer.client_line
        for a in plan.attempts:
            if a.result.outcome is SendOutcome.SEND_OK:
                if p.kind == GRPC and a.attempt > 1:
                    line(
                        inst, a.at_ms + a.result.rt_ms, "INFO", G_PRODUCER, "rocketmq-client-callback-1",
                        fill(
                            statements.G_RESEND_OK.template, msg.topic, msg.uniq_key, SEND_ATTEMPTS, a.attempt,
                            f"ipv4:{broker.host.ip}:8081", inst.client_id,
                        ),
                    )  # fmt: skip
                continue
            end = a.at_ms + a.result.rt_ms
            mq = java.message_queue_to_string(
                msg.topic, broker.name, (msg.queue_id + a.attempt - 1) % world.BUSINESS_QUEUES
            )
            if p.kind == GRPC:
                template = statements.G_SEND_RETRY if a.retried else statements.G_SEND_FAILED
                args = (
                    SEND_ATTEMPTS,
                    a.attempt,
                    msg.topic,
                    msg.uniq_key,
                    f"ipv4:{broker.host.ip}:8081",
                    inst.client_id,
                )
                line(
                    inst, end, template.level, G_PRODUCER, "rocketmq-client-callback-1", fill(template.template, *args)
                )
                continue
            if not a.retried:
                continue  # the last failure is thrown to the application (L-P3), not logged by the client
            exc = f"org.apache.rocketmq.remoting.exception.RemotingConnectException: connect to {broker.addr} failed"
            if inst.kind == CLIENT_5X:
                text = statements.L_P1_520_LITERAL  # 5.2.0 prints the placeholders literally (§12)
                line(inst, end, "WARN", C_PRODUCER, "main", text, layouts.java_stack(exc, FRAMES_SEND))
            else:
                text = fill(statements.L_P1.template, self.rng.getrandbits(62), a.result.rt_ms, mq)
                line(inst, end, "WARN", C_PRODUCER, "main", text, layouts.java_stack(exc, FRAMES_SEND))
                props = {"KEYS": msg.keys, "TAGS": msg.tags, "UNIQ_KEY": msg.uniq_key, "WAIT": "true"}
                line(inst, end, "WARN", C_PRODUCER, "main", java.message_to_string(msg.topic, props, msg.body))

    def _store_business(self, msg: Message, broker: world.Broker, cost: int) -> None:
        now = self.loop.now
        props = {"KEYS": msg.keys, "TAGS": msg.tags, "UNIQ_KEY": msg.uniq_key}
        if broker.major >= 5:
            # 5.x brokers stamp MSG_REGION and TRACE_ON on every sent message (§7.1); 4.9.4 stored neither (§12)
            props["MSG_REGION"] = trace.DEFAULT_REGION
            props["TRACE_ON"] = "true"
        copy = broker.store(
            msg.topic, msg.queue_id, props, msg.body, msg.born_ts, msg.producer.instance.host.addr, 0, now
        )
        msg.stored = copy
        self.stats.count(self.stats.topic_put, broker, msg.topic, now)
        p = msg.producer
        if self.s.trace and p.kind != GRPC:
            rec = trace.pub_record(
                msg.born_ts, trace.DEFAULT_REGION, p.group, msg.topic, msg.uniq_key, msg.tags, msg.keys, broker.addr,
                len(msg.body), cost, trace.MSG_TYPE_NORMAL, copy.offset_msg_id, True,
            )  # fmt: skip
            self.tracer.record(p.instance, now + 1, rec, [msg.uniq_key, *msg.keys.split(" ")])
        for g in self.topo.groups:
            if g.scenario.topic != msg.topic:
                continue
            if g.scenario.share < 1.0 and self.rng.random() >= g.scenario.share:
                continue
            targets = g.instances if g.broadcasting else [g.instances[msg.queue_id % len(g.instances)]]
            for inst in targets:
                self.consumer.start_lifecycle(g, inst, msg, copy)


def _poisoned(payload: dict[str, object], cause: str) -> dict[str, object]:
    """The payload as a bad producer sent it: ``json`` (rendered as ``key=value;…`` text, not JSON), ``validation``
    (a negative amount), ``missing-customer`` (no user)."""
    out = dict(payload)
    if cause == "validation":
        out["amount"] = -float(str(out["amount"]))
    elif cause == "missing-customer":
        out["userId"] = None
    return out


def _bump(u: float) -> float:
    # concentrate a share of traffic in the middle of the day
    return 0.25 + 0.5 * u
