"""After a failed delivery: carry out the engine's hop on the broker's store. Client-local retries redeliver at
once; send-backs and re-publishes go through ``SCHEDULE_TOPIC_XXXX`` to ``%RETRY%<group>`` (or straight to
``%DLQ%<group>``), POP retries revive as a new copy; each put is counted for the broker's stats and logged where the
broker or client logs it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rocketmq_retry.contract import DEAD_LETTERED, DROPPED
from rocketmq_retry.engine import ConsumeMode, HopAction, NextHop, SendBackFault, consumer_retry_policy, retry_topic
from rocketmq_retry.engine.model import DLQ_TOPIC_PREFIX, SCHEDULE_TOPIC, dlq_topic
from rocketmq_retry.logformats import java, statements, stats
from rocketmq_retry.logformats.statements import fill
from rocketmq_retry.simulate import world
from rocketmq_retry.simulate.context import Part, SimContext
from rocketmq_retry.simulate.javanames import C_CMCS, C_POP
from rocketmq_retry.simulate.listener import ListenerLogs, thread_of
from rocketmq_retry.simulate.model import GRPC, Lifecycle
from rocketmq_retry.simulate.render import topic_config

LOCAL_RETRIES = (HopAction.LOCAL_RESUBMIT, HopAction.ORDERLY_SUSPEND, HopAction.FIFO_LOCAL_RETRY)


class RetryPath(Part):
    def __init__(
        self,
        ctx: SimContext,
        listener: ListenerLogs,
        deliver: Callable[[Lifecycle], None],
        pull_lag: Callable[[], int],
    ) -> None:
        super().__init__(ctx)
        self.listener = listener
        self.deliver = deliver  # the consumer's next delivery of a lifecycle
        self.pull_lag = pull_lag

    def apply(self, lc: Lifecycle, hop: NextHop, t: int, start: int, fault: SendBackFault) -> None:
        g = lc.group
        lc.hops.append(
            {"at": t, "action": hop.action.value, "topic": hop.topic or "", "delay_level": hop.delay_level,
             "reconsume_times": hop.reconsume_times, "ready_at": hop.ready_at_ms, "rule": hop.rule}
        )  # fmt: skip
        rpc_ms = self.rng.randint(1, 6)
        if fault is not SendBackFault.NONE and g.kind != GRPC and not g.orderly:
            self.listener.send_back_fault(lc, t, start, fault)
            rpc_ms += 3
        action = hop.action
        if action is HopAction.DROPPED:
            self._dropped(lc, hop, t, start)
            return
        if action in LOCAL_RETRIES:
            lc.client_r = hop.reconsume_times
            self.loop.at(max(hop.ready_at_ms, t) + self.rng.randint(0, 3), self.deliver, lc)
            return
        self._put(lc, hop, t, start, rpc_ms)

    def _dropped(self, lc: Lifecycle, hop: NextHop, t: int, start: int) -> None:
        """A broadcasting (L-C4) or POP (L-C12) consumer gives the message up."""
        g, inst = lc.group, lc.inst
        if g.broadcasting and g.kind != GRPC:
            ext, _ = self.listener.rendered(lc, start)
            self.writer.client_line(inst, t, "WARN", C_CMCS, thread_of(lc), fill(statements.L_C4.template, ext))
        elif g.policy.consume_mode is ConsumeMode.POP and g.kind != GRPC:
            ext, _ = self.listener.rendered(lc, start)
            self.writer.client_line(inst, t, "WARN", C_POP, thread_of(lc), fill(statements.L_C12.template, ext))
        lc.final_state, lc.final_at = DROPPED, hop.ready_at_ms

    def _put(self, lc: Lifecycle, hop: NextHop, t: int, start: int, rpc_ms: int) -> None:
        """A new copy on the broker: via the schedule topic, straight to the DLQ, or a POP revive."""
        g, inst = lc.group, lc.inst
        broker = self.topo.broker_of(g)
        action = hop.action
        base = dict(lc.copy.properties)
        # the client re-published the message itself (the fallback after a failed send-back, the orderly send-back
        # past the max, §1.4, §4), also when the broker's handleRetryAndDLQ turns it into a DLQ put
        republished = action is HopAction.REPUBLISHED_RETRY or (
            action is HopAction.DEAD_LETTER and hop.properties.get("DELAY") != "0" and g.kind != GRPC
        )
        if republished:
            # the internal producer copies the client's property map (§1.4): pull-added keys travel along
            base = world.client_view(lc.copy, broker, None if g.orderly else start + inst.host.skew_ms)
        props = {**base, **hop.properties}
        # a re-published copy is a new message, born on the consumer's host (the broker's send-back keeps the
        # delivered copy's bornHost, §2.2 step 11)
        born_host = inst.host.addr if republished else lc.copy.born_host
        born_ts = t + inst.host.skew_ms if republished else lc.copy.born_ts
        store_at = t + rpc_ms
        at = self.loop.at
        if hop.via_schedule_topic:
            at(store_at, self._store_schedule, lc, hop, props, born_ts, born_host, t)
        elif action is HopAction.DEAD_LETTER:
            at(
                max(store_at, hop.ready_at_ms + rpc_ms),
                self._store_dlq,
                lc,
                hop,
                props,
                born_ts,
                born_host,
                hop.topic or "",
            )
        elif action is HopAction.INVISIBLE_RETRY:
            revive = hop.ready_at_ms + self.rng.randint(0, 1000)  # PopReviveService polls every reviveInterval (1 s)
            at(revive, self._store_redelivery, lc, hop, props, born_ts, born_host, hop.topic or "", 0)
        else:
            raise RuntimeError(f"simulator has no handling for engine action {action}")

    def _store_schedule(
        self, lc: Lifecycle, hop: NextHop, props: dict[str, str], born_ts: int, born_host: str, t: int
    ) -> None:
        g = lc.group
        now = self.loop.now
        broker = self.topo.broker_of(g)
        copy = broker.store(
            SCHEDULE_TOPIC, hop.queue_id or 0, props, lc.copy.body, born_ts, born_host, hop.reconsume_times, now
        )
        self.stats.count(self.stats.topic_put, broker, SCHEDULE_TOPIC, now)
        if hop.action is HopAction.SCHEDULED_RETRY:
            self.stats.count(self.stats.sndbck, broker, f"{lc.msg.topic}@{g.name}", now)
        # ScheduleMessageService: due at store time + delay, found by the 100 ms timer task (§3.1, §3.3)
        due = now + hop.delay_ms + self.rng.randint(0, 100)
        dest = hop.destination_topic or retry_topic(g.name)
        qid = int(props.get("REAL_QID", "0"))
        if dest.startswith(DLQ_TOPIC_PREFIX):
            self.loop.at(due, self._store_dlq, lc, hop, props, born_ts, born_host, dest, copy)
        else:
            self.loop.at(due, self._store_redelivery, lc, hop, props, born_ts, born_host, dest, qid)

    def _store_redelivery(
        self, lc: Lifecycle, hop: NextHop, props: dict[str, str], born_ts: int, born_host: str, topic: str, qid: int
    ) -> None:
        now = self.loop.now
        broker = self.topo.broker_of(lc.group)
        copy = broker.store(topic, qid, props, lc.copy.body, born_ts, born_host, hop.reconsume_times, now)
        self.stats.count(self.stats.topic_put, broker, topic, now)
        lc.copy = copy
        lc.pulled_topic = topic
        lc.client_r = hop.reconsume_times
        self.loop.at(now + self.pull_lag(), self.deliver, lc)

    def _store_dlq(
        self, lc: Lifecycle, hop: NextHop, props: dict[str, str], born_ts: int, born_host: str, topic: str, *_: Any
    ) -> None:
        g = lc.group
        now = self.loop.now
        broker = self.topo.broker_of(g)
        topic = topic or dlq_topic(g.name)
        props = dict(props)
        if hop.via_schedule_topic:
            props["DELAY"] = props.get("DELAY", "0")
        if topic not in broker.created_topics:
            broker.created_topics.add(topic)
            self.writer.broker_line(
                broker,
                now,
                "broker",
                "INFO",
                "SendMessageThread_1",
                fill(statements.L_B1.template, topic_config(topic, broker)),
            )
        copy = broker.store(topic, 0, props, lc.copy.body, born_ts, born_host, hop.reconsume_times, now)
        lc.dlq = copy
        lc.final_state, lc.final_at = DEAD_LETTERED, now
        via_send_back = props.get("DELAY") == "0" and not hop.via_schedule_topic
        if via_send_back:
            self.stats.count(self.stats.sndbck, broker, f"{lc.msg.topic}@{g.name}", now)
        else:
            # TOPIC_PUT_NUMS counts a DLQ put only on handleRetryAndDLQ's path (SendMessageProcessor
            # #handlePutMessageResult) or the schedule service's delivery of a DLQ-bound copy; consumerSendMsgBack
            # counts SNDBCK_PUT_NUMS (and, 5.x, SNDBCK2DLQ_TIMES) instead
            self.stats.count(self.stats.topic_put, broker, topic, now)
        if broker.major >= 5:
            self._broker5_dlq_lines(lc, hop, broker, topic, via_send_back)
        if g.kind == GRPC and g.orderly:
            self._grpc_fifo_dlq_lines(lc, broker)

    def _broker5_dlq_lines(
        self, lc: Lifecycle, hop: NextHop, broker: world.Broker, topic: str, via_send_back: bool
    ) -> None:
        g = lc.group
        now = self.loop.now
        if via_send_back:
            # §6.3 L-B7: RocketmqDLQ → broker_default.log, one line per dead letter from consumerSendMsgBack
            self.writer.broker_line(
                broker, now, "broker_default", "INFO", "SendMessageThread_1",
                fill(statements.L_B7.template, topic, None, lc.msg.topic, g.name, lc.msg.uniq_key, now),
            )  # fmt: skip
            key = stats.stats_key("null", lc.msg.topic, g.name, statements.SEND_BACK_TO_DLQ)
            self.stats.count(self.stats.dlq, broker, key, now)
        elif g.orderly and not g.broadcasting:
            self.writer.broker_line(
                broker, now, "broker", "INFO", "SendMessageThread_1",
                fill(statements.L_B2.template, g.name, retry_topic(g.name), hop.reconsume_times, g.max_reconsume),
            )  # fmt: skip

    def _grpc_fifo_dlq_lines(self, lc: Lifecycle, broker: world.Broker) -> None:
        """A gRPC FIFO consumer forwards the exhausted message to the DLQ itself."""
        g, inst = lc.group, lc.inst
        now = self.loop.now
        mq = java.grpc_message_queue_to_string(broker.name, lc.msg.topic, lc.msg.queue_id)
        self.writer.client_line(
            inst, now - 2, "INFO", statements.G_FIFO_EXHAUSTED.logger, thread_of(lc),
            fill(
                statements.G_FIFO_EXHAUSTED.template,
                consumer_retry_policy(g.policy).max_attempts,
                lc.client_r + 1, mq, lc.msg.uniq_key,
                inst.client_id,
            ),
        )  # fmt: skip
        self.writer.client_line(
            inst, now + 3, "INFO", statements.G_FORWARD_DLQ_OK.logger, "rocketmq-client-callback-1",
            fill(statements.G_FORWARD_DLQ_OK.template, inst.client_id, g.name, lc.msg.uniq_key, mq,
                 f"ipv4:{broker.host.ip}:8081", inst.host.next_uniq_key(now)),
        )  # fmt: skip
