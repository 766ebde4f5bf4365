"""Consuming: a lifecycle per delivery target of a stored message, each delivery (pull, listener outcome from the
scenario's behaviour, consume timeout, trace contexts, client stats) and, on failure, the engine's ``next_hop``,
which :class:`~rocketmq_retry.simulate.retry.RetryPath` carries out.
"""

from __future__ import annotations

import random

from rocketmq_retry.contract import CONSUMED, FLOW_CONTROL, IN_RETRY
from rocketmq_retry.engine import ConsumeMode, ConsumeOutcome, FailedDelivery, SendBackFault, next_hop
from rocketmq_retry.logformats import java, statements, trace
from rocketmq_retry.logformats.statements import fill
from rocketmq_retry.simulate import world
from rocketmq_retry.simulate.context import Part, SimContext
from rocketmq_retry.simulate.failures import OTHER, FailurePlan, Forced
from rocketmq_retry.simulate.javanames import C_PQ
from rocketmq_retry.simulate.listener import ListenerLogs, listener_class, thread_of
from rocketmq_retry.simulate.model import GRPC, GroupRun, Instance, Lifecycle, Message
from rocketmq_retry.simulate.retry import RetryPath


class Consumer(Part):
    def __init__(self, ctx: SimContext, plan: FailurePlan) -> None:
        super().__init__(ctx)
        self.plan = plan
        self.listener = ListenerLogs(ctx.writer, ctx.topo)
        self.retry = RetryPath(ctx, self.listener, self.deliver, self.pull_lag)
        self.lifecycles: list[Lifecycle] = []

    def start_lifecycle(self, g: GroupRun, inst: Instance, msg: Message, copy: world.StoredCopy) -> None:
        mix = g.scenario.behaviour or self.s.behaviour
        kinds = g.scenario.failure_kinds or self.s.failure_kinds
        behaviour = pick(self.rng, mix)
        kind = pick(self.rng, kinds)
        if g.scenario.app == "spring" or (g.kind == GRPC and kind == "null"):
            kind = "exception"  # the container catches listener exceptions; no null in Spring/gRPC listeners
        if msg.poison and g.scenario.poison > 0:
            kind = "exception"  # a poison message's listener throws on every delivery
        until = self.rng.randint(1, max(1, self.s.until_max))
        lc = Lifecycle(len(self.lifecycles), g, inst, msg, behaviour, kind, until, copy, msg.topic)
        self.lifecycles.append(lc)
        # a consumer that has not started yet pulls the message once it has (started_days_before: 0)
        self.loop.at(max(self.loop.now, inst.ready_at) + self.pull_lag(), self.deliver, lc)

    def pull_lag(self) -> int:
        return 1 + int(self.rng.expovariate(1 / 8))

    def _fails(self, lc: Lifecycle) -> bool:
        b = lc.behaviour
        if b == "ok":
            return False
        if b == "always":
            return True
        if b == "until":
            return lc.client_r < lc.until
        return self.rng.random() < self.s.sometimes_fail_rate

    def _traced(self, g: GroupRun) -> bool:
        return self.s.trace and g.kind != GRPC and g.scenario.app != "spring"

    def deliver(self, lc: Lifecycle) -> None:
        g, inst = lc.group, lc.inst
        t = self.loop.now
        broker = self.topo.broker_of(g)
        lc.deliveries.append((t, lc.client_r, ""))
        self.stats.count(self.stats.group_get, broker, f"{lc.pulled_topic}@{g.name}", t)
        self.stats.client_stat(inst, "PULL_TPS", f"{lc.msg.topic}@{g.name}")
        request_id = inst.host.next_uniq_key(t)
        if self._traced(g):
            rec = trace.sub_before_record(
                t + inst.host.skew_ms, trace.REGION_NULL if broker.major == 4 else trace.DEFAULT_REGION, g.name,
                request_id, lc.msg.uniq_key, lc.client_r, lc.msg.keys,
            )  # fmt: skip
            self.tracer.record(inst, t, rec, [lc.msg.uniq_key, *lc.msg.keys.split(" ")])
        first = not lc.failures
        lc.failures.append(("", "", "", "", ""))
        throttle = first and self.plan.throttle_at(g.name, t) is not None
        forced = self.plan.forced(g, lc.msg.poison, first, t, self.rng.random() if throttle else None)
        # a throttled message is consumed on its first retry (nor does that retry time out)
        retry_of_throttled = lc.throttled and len(lc.deliveries) == 2
        if forced is not None and forced.kind == FLOW_CONTROL:
            lc.throttled = True
        fails = forced is not None or (not retry_of_throttled and self._fails(lc))
        timeout = (
            not fails
            and not retry_of_throttled
            and g.kind != GRPC
            and g.policy.consume_mode is ConsumeMode.CONCURRENTLY
            and not g.broadcasting
            and self.rng.random() < self.s.timeout_rate
        )
        self.listener.app_lines(lc, t, fails)
        cost = max(1, int(self.rng.lognormvariate(2.3, 0.9)))
        index = len(lc.deliveries) - 1
        if timeout:
            cost = self._schedule_expiry(lc, t, index)
        self.loop.at(t + cost, self._complete, lc, t, cost, fails, timeout, request_id, index, forced)

    def _schedule_expiry(self, lc: Lifecycle, t: int, index: int) -> int:
        """A delivery that overruns consumeTimeout: schedule the sweep that expires it; returns its (long) cost."""
        lc.timeouts += 1
        limit = lc.group.policy.consume_timeout_minutes * 60_000
        cost = limit + self.rng.randint(60_000, 10 * 60_000)
        base = lc.inst.sweep_base if lc.inst.sweep_base is not None else t
        # the first cleanExpireMsg run (every consumeTimeout since start, §1.6) that finds the message expired
        sweep = base + ((t + limit - base) // limit + 1) * limit
        self.loop.at(sweep, self._expire_sweep, lc, t, index)
        return cost

    def _complete(
        self,
        lc: Lifecycle,
        start: int,
        cost: int,
        fails: bool,
        timeout: bool,
        request_id: str,
        index: int,
        forced: Forced | None = None,
    ) -> None:
        g, inst = lc.group, lc.inst
        t = self.loop.now
        self.stats.client_stat(inst, "CONSUME_RT", f"{lc.msg.topic}@{g.name}", cost)
        if not fails:
            self._succeeded(lc, start, cost, timeout, request_id, index)
            return
        self.stats.client_stat(inst, "CONSUME_FAILED_TPS", f"{lc.msg.topic}@{g.name}")
        # consume threads log independently of the other threads of the JVM: the real files are a few ms out of
        # timestamp order in places (§12), so the failure lines may carry a slightly earlier time than lines
        # already written
        outcome, code, exc = self.listener.failure(lc, start, t - self.rng.randint(0, 4), forced)
        lc.deliveries[index] = (start, lc.client_r, outcome.value)
        top, root = (exc.cls, exc.root.cls) if exc is not None else ("", "")
        kind, cause, incident = (forced.kind, forced.cause, forced.incident_id) if forced else (OTHER, "", "")
        lc.failures[index] = (kind, cause, incident, top, root)
        self._sub_after(lc, request_id, cost, False, code, t)
        fault = SendBackFault.NONE
        concurrent_remoting = (
            g.kind != GRPC and g.policy.consume_mode is ConsumeMode.CONCURRENTLY and not g.broadcasting
        )
        if concurrent_remoting and self.rng.random() < self.s.send_back_fault_rate:
            fault = (
                SendBackFault.RPC_AND_FALLBACK_FAILED
                if self.rng.random() < self.s.fallback_fault_share
                else SendBackFault.RPC_FAILED
            )
            lc.send_back_faults += 1
        self._fail(lc, t, start, outcome, fault)

    def _succeeded(self, lc: Lifecycle, start: int, cost: int, timeout: bool, request_id: str, index: int) -> None:
        g, inst = lc.group, lc.inst
        t = self.loop.now
        code = trace.CONTEXT_TIME_OUT if timeout else trace.CONTEXT_SUCCESS
        self._sub_after(lc, request_id, cost, True, code, t)
        self.stats.client_stat(inst, "CONSUME_OK_TPS", f"{lc.msg.topic}@{g.name}")
        if not timeout:  # a timed-out delivery keeps its TIMEOUT outcome; the late return only shows in the trace
            lc.deliveries[index] = (start, lc.deliveries[index][1], "SUCCESS")
        if g.scenario.app == "spring":
            self.writer.spring_line(
                inst, t, "INFO", listener_class(g),
                thread_of(lc), f"handled {lc.msg.topic} orderId={lc.msg.order_id} in {cost} ms",
            )  # fmt: skip
        if not timeout and lc.final_state == IN_RETRY:
            lc.final_state, lc.final_at = CONSUMED, t

    def _sub_after(self, lc: Lifecycle, request_id: str, cost: int, ok: bool, code: int, t: int) -> None:
        if not self._traced(lc.group):
            return
        rec = trace.sub_after_record(
            request_id, lc.msg.uniq_key, cost, ok, lc.msg.keys, code, t + lc.inst.host.skew_ms, lc.group.name
        )
        self.tracer.record(lc.inst, t, rec, [lc.msg.uniq_key])

    def _expire_sweep(self, lc: Lifecycle, start: int, index: int) -> None:
        """``ProcessQueue.cleanExpiredMsg`` found the slow message (§1.6): L-C8, then the engine's TIMEOUT hop."""
        g, inst = lc.group, lc.inst
        now = self.loop.now
        broker = self.topo.broker_of(g)
        sweeper = java.scheduled_thread_name("CleanExpireMsgScheduledThread_", g.name, 1, inst.client_version)
        self.writer.client_line(
            inst, now, "INFO", C_PQ, sweeper,
            fill(
                statements.L_C8.template, lc.msg.topic, lc.msg.uniq_key, broker.store_addr, lc.copy.queue_id,
                lc.copy.queue_offset,
            ),
        )  # fmt: skip
        lc.deliveries[index] = (start, lc.deliveries[index][1], ConsumeOutcome.TIMEOUT.value)
        lc.failures[index] = (OTHER, "", "", "", "")
        self._fail(lc, now, start, ConsumeOutcome.TIMEOUT, SendBackFault.NONE)

    def _fail(self, lc: Lifecycle, t: int, start: int, outcome: ConsumeOutcome, fault: SendBackFault) -> None:
        g = lc.group
        failure = FailedDelivery(
            reconsume_times=lc.client_r,
            failed_at_ms=t,
            outcome=outcome,
            original_topic=lc.msg.topic,
            # the scenario's listener setting; unset (0) leaves the config's delay_level_when_next_consume to the engine
            delay_level_when_next_consume=g.scenario.delay_level or None,
            send_back_fault=fault,
            born_at_ms=lc.msg.born_ts,
            stored_reconsume_times=lc.copy.reconsume_times if lc.copy.reconsume_times != lc.client_r else None,
            offset_msg_id=lc.copy.offset_msg_id,
            uniq_key=lc.msg.uniq_key,
            origin_message_id=lc.copy.properties.get("ORIGIN_MESSAGE_ID"),
            delivered_at_ms=start,
        )
        self.retry.apply(lc, next_hop(g.policy, failure), t, start, fault)


def pick(rng: random.Random, weights: dict[str, float]) -> str:
    """A name drawn by weight (one ``rng.random()``); the last positive weight absorbs rounding."""
    u = rng.random()
    acc = 0.0
    last = ""
    for name, w in weights.items():
        acc += w
        last = name if w > 0 else last
        if u < acc:
            return name
    return last
