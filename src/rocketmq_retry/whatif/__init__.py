"""The what-if replay: a group's observed failures of a date range run again under another retry policy with the
engine (docs/causes.md "What if"). No Spark, no Airflow: the tables are read through the read layer's ``Explorer``.

Public API::

    change = PolicyChange(max_reconsume_times=16, delay_levels="1s 5s 10s 30s 1m 2m")
    result = what_if(explorer, "G", "2026-11-20", "2026-11-21", change)   # -> WhatIf
    result.as_dict()                                                     # JSON-ready
    render(result)                                                       # the text the CLI prints

``observe`` (the read) and ``replay`` (pure: an ``Observation`` and two engine policies) are its two halves.

The groups page's what-if of a group's current incident::

    propose(config.group_policy("G"), duration_ms)          # -> Proposal: the smallest max that outlasts it (pure)
    incident_what_ifs(explorer, "2026-11-08", "2026-11-21")  # -> {group: IncidentWhatIf}
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rocketmq_retry.whatif.incident import IncidentWhatIf, incident_what_if, incident_what_ifs
from rocketmq_retry.whatif.model import MessageChange, Observation, Setting, Totals, WhatIf
from rocketmq_retry.whatif.policy import (
    PolicyChange,
    PolicyRefused,
    changed_settings,
    parse_retry_policy,
    proposed_policy,
)
from rocketmq_retry.whatif.propose import Proposal, propose
from rocketmq_retry.whatif.read import current_incidents, observe
from rocketmq_retry.whatif.render import render
from rocketmq_retry.whatif.replay import NOT_REPLAYED, replay

if TYPE_CHECKING:
    from rocketmq_retry.explore.warehouse import Explorer

__all__ = [
    "NOT_REPLAYED",
    "IncidentWhatIf",
    "MessageChange",
    "Observation",
    "PolicyChange",
    "PolicyRefused",
    "Proposal",
    "Setting",
    "Totals",
    "WhatIf",
    "changed_settings",
    "current_incidents",
    "incident_what_if",
    "incident_what_ifs",
    "observe",
    "parse_retry_policy",
    "propose",
    "proposed_policy",
    "render",
    "replay",
    "what_if",
]


def what_if(ex: Explorer, group: str, date_from: object, date_to: object, change: PolicyChange) -> WhatIf:
    """The group's failures of the range under ``change``. The policy is checked before anything is read, so a
    refused policy is refused even without a warehouse."""
    config = ex.config
    proposed = proposed_policy(config, group, change)
    current = config.group_policy(group)
    settings = changed_settings(current, proposed, config.group_config(group).broker)
    return replay(observe(ex, group, date_from, date_to), current, proposed, settings)
