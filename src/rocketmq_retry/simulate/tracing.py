"""Message trace: each client's ``AsyncTraceDispatcher`` batches trace contexts into one ``RMQ_SYS_TRACE_TOPIC``
message (stored on the broker and written to the trace export) at 20 contexts or 500 ms, whichever comes first (§7.1).
"""

from __future__ import annotations

from rocketmq_retry.engine.model import TRACE_TOPIC
from rocketmq_retry.simulate.loop import EventLoop
from rocketmq_retry.simulate.model import Instance
from rocketmq_retry.simulate.render import LogWriter

BATCH = 20
FLUSH_MS = 500


class TraceDispatcher:
    def __init__(self, loop: EventLoop, writer: LogWriter) -> None:
        self.loop = loop
        self.writer = writer

    def record(self, inst: Instance, t: int, record: str, keys: list[str]) -> None:
        inst.trace_buf.append(record)
        for k in keys:
            if k and k not in inst.trace_keys:
                inst.trace_keys.append(k)
        if len(inst.trace_buf) >= BATCH:
            self.flush(inst)
        elif inst.trace_flush_at is None:
            inst.trace_flush_at = t + FLUSH_MS
            self.loop.at(t + FLUSH_MS, self._timer, inst)

    def _timer(self, inst: Instance) -> None:
        inst.trace_flush_at = None
        if inst.trace_buf:
            self.flush(inst)

    def flush(self, inst: Instance) -> None:
        now = self.loop.now
        body = "".join(inst.trace_buf)
        broker = inst.broker
        uniq = inst.host.next_uniq_key(now)
        props = {"KEYS": " ".join(inst.trace_keys), "UNIQ_KEY": uniq, "WAIT": "true"}
        broker.store(TRACE_TOPIC, 0, props, body.encode("utf-8"), now + inst.host.skew_ms, inst.host.addr, 0, now + 3)
        self.writer.trace_batch(now, body)
        inst.trace_buf = []
        inst.trace_keys = []

    def flush_all(self, instances: list[Instance]) -> None:
        """What is still buffered at the horizon."""
        for inst in instances:
            if inst.trace_buf:
                self.flush(inst)
