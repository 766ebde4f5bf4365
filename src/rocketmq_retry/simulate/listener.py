"""What each client flavour writes when a listener fails (§6.2, §6.4, §11, §12): the 4.x/5.x remoting consume
services, the rocketmq-spring container and the gRPC SDK, plus the send-back failures of remoting clients. Each
function returns or writes lines only; the retry decision is the engine's.
"""

from __future__ import annotations

from rocketmq_retry.engine import ConsumeMode, ConsumeOutcome, SendBackFault, retry_topic
from rocketmq_retry.logformats import java, layouts, statements, trace
from rocketmq_retry.logformats.statements import fill
from rocketmq_retry.simulate import world
from rocketmq_retry.simulate.exceptions import Throwable, business_exception, cause_exception, print_stack_trace
from rocketmq_retry.simulate.failures import Forced
from rocketmq_retry.simulate.javanames import C_CMCS, C_CMOS, C_DMPCI, C_POP, FRAMES_SEND, FRAMES_SEND_BACK
from rocketmq_retry.simulate.model import CLIENT_5X, GRPC, GroupRun, Lifecycle
from rocketmq_retry.simulate.render import LogWriter
from rocketmq_retry.simulate.topology import Topology, host_stem

GRPC_CONSUME_TASK = "org.apache.rocketmq.client.java.impl.consumer.ConsumeTask"


def listener_class(g: GroupRun) -> str:
    """The application's listener for ``g`` (one ``@RocketMQMessageListener`` class per container)."""
    package = g.run.package if g.run is not None else "com.example"
    return f"{package}.{''.join(w.capitalize() for w in host_stem(g.name).split('-'))}Listener"


def thread_of(lc: Lifecycle) -> str:
    """The listener's thread: the consume pool (20 threads, counted from 1 per pool) of the client version, or
    the gRPC SDK's ``RocketmqMessageConsumption-<clientIndex>-<n>`` (``n`` is process-wide in the SDK)."""
    n = 1 + lc.lid % 20
    inst = lc.inst
    if inst.kind == GRPC:
        return f"RocketmqMessageConsumption-{inst.grpc_index}-{n + 20 * inst.grpc_index}"
    pop = lc.group.policy.consume_mode is ConsumeMode.POP
    return java.consume_thread_name(lc.group.name, n, inst.client_version, pop=pop)


# What a production listener's own code logs at INFO while it works on one delivery (scenario ``app_lines``):
# (logger role, text); {e} the entity, {k} the business key, {s} the downstream service, {n} a number.
APP_LINES = (
    ("listener", "received {topic} msgId={msg_id} keys={keys} reconsumeTimes={r}"),
    ("service", "loading {e} {k}"),
    ("repository", "found {e} {k} status=PENDING version={n}"),
    ("service", "calling {s} POST /api/v1/{e}s/{k}"),
    ("service", "{s} answered 200 in {n} ms"),
    ("repository", "updated {e} {k} status=PROCESSING version={n}"),
    ("service", "published audit record for {e} {k}"),
    ("listener", "metrics: {topic} lag={n} inflight={r}"),
)


class ListenerLogs:
    def __init__(self, writer: LogWriter, topo: Topology) -> None:
        self.writer = writer
        self.topo = topo

    def app_lines(self, lc: Lifecycle, t: int, fails: bool) -> None:
        """The listener's own INFO lines of one delivery (scenario ``app_lines``; rocketmq-spring applications):
        what a production service logs around the work, none of it a RocketMQ statement. A delivery that fails
        gets as far as loading its entity; the container's failure line and trace follow."""
        g = lc.group
        n = min(g.scenario.app_lines, 2) if fails else g.scenario.app_lines
        if not n or g.scenario.app != "spring" or lc.inst.kind == GRPC:
            return
        listener = listener_class(g)
        base = listener.removesuffix("Listener")
        loggers = {"listener": listener, "service": base + "Service", "repository": base + "Repository"}
        entity = lc.msg.topic.lower().split("_")[0]
        values = {
            "topic": lc.msg.topic, "msg_id": lc.msg.uniq_key, "keys": lc.msg.keys, "r": lc.client_r,
            "e": entity, "k": lc.msg.order_id, "s": f"{entity}-service", "n": 3 + (lc.lid * 7 + lc.client_r) % 97,
        }  # fmt: skip
        thread = thread_of(lc)
        for i in range(n):
            role, text = APP_LINES[i % len(APP_LINES)]
            self.writer.spring_line(lc.inst, t + i // 2, "INFO", loggers[role], thread, text.format(**values))

    def rendered(self, lc: Lifecycle, start: int, with_start_time: bool = True) -> tuple[str, str]:
        """The delivered copy as the client prints it (``MessageExt``) and its message queue."""
        broker = self.topo.broker_of(lc.group)
        start_time = start + lc.inst.host.skew_ms if with_start_time and not lc.group.orderly else None
        props = world.client_view(lc.copy, broker, start_time)
        ext = world.render_message_ext(lc.copy, broker, lc.msg.topic, props)
        if lc.client_r != lc.copy.reconsume_times:
            ext = ext.replace(f", reconsumeTimes={lc.copy.reconsume_times},", f", reconsumeTimes={lc.client_r},", 1)
        mq = java.message_queue_to_string(lc.copy.topic, broker.name, lc.copy.queue_id)
        return ext, mq

    def failure(
        self, lc: Lifecycle, start: int, t: int, forced: Forced | None = None
    ) -> tuple[ConsumeOutcome, int, Throwable | None]:
        """The listener's failure as each client writes it; returns the engine outcome, the trace context code and
        the exception the client logged (None: it logged none). A planned failure (``forced``) throws its cause's
        exception or returns RECONSUME_LATER; any other fails in the lifecycle's mode (``lc.kind``) with one of
        the generic business exceptions."""
        g = lc.group
        if g.kind == GRPC and g.policy.consume_mode is ConsumeMode.SIMPLE:
            # SimpleConsumer has no listener: the application simply does not ack, and the SDK logs nothing (§5.5)
            return ConsumeOutcome.RECONSUME_LATER, trace.CONTEXT_FAILED, None
        if forced is not None:
            mode, exc = ("later", None) if forced.later else ("exception", cause_exception(forced.cause, lc))
        else:
            mode, exc = lc.kind, business_exception(lc)
        if g.kind != GRPC and g.scenario.app == "spring":
            exc = exc or business_exception(lc)  # the container only sees a failure when the listener throws
            return (*self._spring_failure(lc, t, exc), exc)
        printed = exc if mode == "exception" else None
        if g.kind == GRPC:
            return (*self._grpc_failure(lc, t, mode, exc), printed)
        return (*self._remoting_failure(lc, start, t, mode, exc), printed)

    def _grpc_failure(self, lc: Lifecycle, t: int, mode: str, exc: Throwable | None) -> tuple[ConsumeOutcome, int]:
        if mode != "exception" or exc is None:
            return ConsumeOutcome.RECONSUME_LATER, trace.CONTEXT_FAILED
        g, inst = lc.group, lc.inst
        mq = java.grpc_message_queue_to_string(self.topo.broker_of(g).name, lc.msg.topic, lc.msg.queue_id)
        self.writer.client_line(
            inst, t, "ERROR", GRPC_CONSUME_TASK, thread_of(lc),
            fill(statements.G_LISTENER_EXCEPTION.template, inst.client_id, mq, lc.msg.uniq_key),
            print_stack_trace(exc),
        )  # fmt: skip
        return ConsumeOutcome.EXCEPTION, trace.CONTEXT_EXCEPTION

    def _spring_failure(self, lc: Lifecycle, t: int, exc: Throwable) -> tuple[ConsumeOutcome, int]:
        g = lc.group
        self.writer.spring_line(
            lc.inst, t, "WARN", layouts.SPRING_CONTAINER_LOGGER, thread_of(lc),
            fill(statements.S_CONSUME_FAILED.template, lc.msg.uniq_key, lc.msg.topic, lc.client_r),
            print_stack_trace(exc),
        )  # fmt: skip
        return (ConsumeOutcome.SUSPEND if g.orderly else ConsumeOutcome.RECONSUME_LATER), trace.CONTEXT_FAILED

    def _remoting_failure(
        self, lc: Lifecycle, start: int, t: int, mode: str, exc: Throwable | None
    ) -> tuple[ConsumeOutcome, int]:
        """The 4.x/5.x consume services: L-C1 for a thrown exception, then L-C3 (orderly) or L-C2. L-C1 names the
        exception with ``RemotingHelper.exceptionSimpleDesc``: its ``toString()`` and top frame (a message with
        line ends breaks that line, as it does in real files)."""
        g, inst = lc.group, lc.inst
        thread = thread_of(lc)
        ext, mq = self.rendered(lc, start)
        msgs = java.message_list_to_string([ext])
        fq = C_CMOS if g.orderly else (C_POP if g.policy.consume_mode is ConsumeMode.POP else C_CMCS)
        line = self.writer.client_line
        if mode == "exception" and exc is not None:
            desc = f"{exc}, {exc.frames[0]}"
            line(
                inst, t, "WARN", fq, thread,
                fill(statements.L_C1.template, desc, g.name, msgs, mq), print_stack_trace(exc),
            )  # fmt: skip
        if g.orderly:
            line(inst, t, "WARN", C_CMOS, thread, fill(statements.L_C3.template, g.name, msgs, mq))
            code = {"exception": trace.CONTEXT_EXCEPTION, "null": trace.CONTEXT_RETURNNULL}.get(
                mode, trace.CONTEXT_FAILED
            )
            return ConsumeOutcome.SUSPEND, code
        if mode in ("exception", "null"):
            line(inst, t, "WARN", fq, thread, fill(statements.L_C2.template, g.name, msgs, mq))
        if mode == "exception":
            return ConsumeOutcome.EXCEPTION, trace.CONTEXT_EXCEPTION
        if mode == "null":
            return ConsumeOutcome.RETURN_NULL, trace.CONTEXT_RETURNNULL
        return ConsumeOutcome.RECONSUME_LATER, trace.CONTEXT_FAILED

    def send_back_fault(self, lc: Lifecycle, t: int, start: int, fault: SendBackFault) -> None:
        """A failed ``CONSUMER_SEND_MSG_BACK`` (L-C5) and, when the client's own re-publish fails too, L-C6."""
        g, inst = lc.group, lc.inst
        broker = self.topo.broker_of(g)
        ext, mq = self.rendered(lc, start)
        # a refused connection fails the CONSUMER_SEND_MSG_BACK RPC at once (a 5000 ms timeout would delay the hop)
        exc = f"org.apache.rocketmq.remoting.exception.RemotingConnectException: connect to {broker.addr} failed"
        tb = layouts.java_stack(exc, FRAMES_SEND_BACK)
        thread = thread_of(lc)
        if inst.kind == CLIENT_5X:
            msg = fill(statements.L_C5_5X.template, g.name, broker.name, mq, ext)
        else:
            msg = fill(statements.L_C5_4X.template, g.name)
        self.writer.client_line(inst, t + 5, "ERROR", C_DMPCI, thread, msg, tb)
        if fault is SendBackFault.RPC_AND_FALLBACK_FAILED:
            exc2 = (
                "org.apache.rocketmq.client.exception.MQClientException: "
                "Send [3] times, still failed, cost [3012]ms, Topic: " + retry_topic(g.name)
            )
            text = fill(statements.L_C6.template, g.name, ext)
            self.writer.client_line(
                inst, t + 9, "ERROR", C_CMCS, thread, text,
                layouts.java_stack(exc2, [f"{FRAMES_SEND[4]}", *FRAMES_SEND_BACK[1:]]),
            )  # fmt: skip
