"""Dead letters of D (DESIGN §4): the lifecycles that ended DEAD_LETTERED with their DLQ arrival (observed, or
inferred from the engine) on D, with the compensation route and whether compensation may act on them."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from rocketmq_retry import contract as C
from rocketmq_retry.config import Config
from rocketmq_retry.engine.model import HopAction
from rocketmq_retry.jobs.reconstruct.lifecycles import business_key
from rocketmq_retry.routing import java_regex


def compensable() -> Column:
    """A dead letter compensation may act on: its DLQ arrival was observed (a DLQ copy, the broker's or the SDK's DLQ
    line), or the engine's answer for its last failure is the DLQ (its group's threshold reached, or a path that
    dead-letters earlier, such as the 4.x fallback re-publish) and that failure was observed. Its group is
    established by construction: a row no evidence gave a group never reaches a lifecycle."""
    observed = F.col("dlq_ms").isNotNull()
    engine_agrees = F.coalesce(F.col("last_engine_action") == HopAction.DEAD_LETTER, F.lit(False))
    return observed | (engine_agrees & F.coalesce(F.col("last_fail_seen"), F.lit(False)))


def review_reason() -> Column:
    """Why a dead letter is held for review rather than compensated (null when it is compensable)."""
    return (
        F.when(compensable(), F.lit(None).cast("string"))
        .when(
            ~F.coalesce(F.col("last_engine_action") == HopAction.DEAD_LETTER, F.lit(False)),
            F.lit("DLQ inferred, but the engine's answer for the last failure is not the DLQ"),
        )
        .otherwise(F.lit("DLQ inferred, but the failure of the last delivery was not observed"))
    )


def compensation_handler(config: Config) -> Column:
    """The handler of the first matching route, by the one routing rule (``routing.py``: the same
    regular expression text the batch service matches); null when none matches. A null topic is matched as ``""``,
    as the batch service does."""
    topic = F.coalesce(F.col("original_topic"), F.lit(""))
    expr: Column = F.lit(None).cast("string")
    for route in reversed(config.compensation.routes):  # first match wins
        cond = topic.rlike(java_regex(route.topic)) & F.col("consumer_group").rlike(java_regex(route.group))
        expr = F.when(cond, F.lit(route.handler)).otherwise(expr)
    return expr


def dead_letters_from(
    life: DataFrame, config: Config, day_bounds: tuple[int, int], carry_after_ms: int | None = None
) -> DataFrame:
    """The ``dead_letters`` rows of the day ``day_bounds`` (epoch ms, start inclusive, end exclusive) from the
    lifecycles (``reconstruct.lifecycles.lifecycles_from``): an observed DLQ arrival on D, else an inferred one
    expected on D or expected after ``carry_after_ms`` (the horizon of the run before D, which saw it still due)."""
    d0, d1 = day_bounds
    after = d0 - 1 if carry_after_ms is None else min(carry_after_ms, d0 - 1)
    dlq_dead = F.col("final_state") == C.DEAD_LETTERED
    dlq_at = F.coalesce(F.col("dlq_ms"), F.col("last_next_expected_ms"))
    inferred_here = F.col("dlq_ms").isNull() & (dlq_at > after) & (dlq_at < d1)
    return life.where(dlq_dead & (F.coalesce(F.col("dlq_in_day"), F.lit(False)) | inferred_here)).select(
        *C.select_columns(
            "dead_letters",
            {
                "dlq_at": F.timestamp_millis(dlq_at),
                "reconsume_times": F.coalesce(F.col("dlq_r"), F.col("last_attempt") + F.col("dlq_copy_offset")).cast(
                    "int"
                ),
                "business_key": business_key(config),
                "compensation_handler": compensation_handler(config),
                "dlq_inferred": F.col("dlq_ms").isNull(),
                "evidence": F.col("ev_dlq"),
                "compensable": compensable(),
                "review_reason": review_reason(),
            },
        )
    )
