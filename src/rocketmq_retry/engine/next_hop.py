"""``next_hop``: what happens after one failed delivery, for every kind of consumer the engine knows."""

from __future__ import annotations

from rocketmq_retry.engine.consume_concurrently import concurrently_next_hop
from rocketmq_retry.engine.consume_orderly import orderly_next_hop
from rocketmq_retry.engine.consume_pop import pop_next_hop
from rocketmq_retry.engine.grpc_consume import grpc_next_hop
from rocketmq_retry.engine.max_reconsume_times import is_grpc
from rocketmq_retry.engine.model import ConsumeMode, ConsumeOutcome, FailedDelivery, GroupPolicy, MessageModel, NextHop


def next_hop(policy: GroupPolicy, failure: FailedDelivery) -> NextHop:
    """Route a failed delivery to the rules of its consumer kind.

    - remoting (4.x/5.x) concurrently → §1.3–§1.6, §2.2, §2.3; orderly → §4/§12; pop (5.x) → §1.7;
    - gRPC (5.x; ``simple`` always means the gRPC SimpleConsumer) → §5.3–§5.5. A gRPC ``pop`` group is read as a
      PushConsumer, which pops under the hood.
    """
    if failure.outcome == ConsumeOutcome.SUCCESS:
        raise ValueError("next_hop is for failed deliveries; a SUCCESS outcome has no next hop")
    if failure.reconsume_times < 0:
        raise ValueError(f"reconsume_times must be >= 0, got {failure.reconsume_times}")
    if is_grpc(policy):
        return grpc_next_hop(policy, failure)
    if policy.consume_mode == ConsumeMode.ORDERLY:
        return orderly_next_hop(policy, failure)
    if policy.consume_mode == ConsumeMode.POP and policy.message_model != MessageModel.BROADCASTING:
        # POP is a clustering mechanism; a broadcasting consumer pulls, so it takes the concurrent drop rule (§1.3).
        return pop_next_hop(policy, failure)
    return concurrently_next_hop(policy, failure)
