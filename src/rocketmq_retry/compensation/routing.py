"""Which handler compensates a dead letter, and its business key (DESIGN §6 ``compensation.routes`` /
``business_key``). Pure functions: the reconstruction job may call them to fill ``dead_letters``."""

from __future__ import annotations

import fnmatch
import json
import re
from typing import Any

from rocketmq_retry.config import BusinessKeyConfig, CompensationConfig

# RocketMQ joins several KEYS with a space (MessageConst.KEY_SEPARATOR).
KEY_SEPARATOR = " "

_SEGMENT = re.compile(r"""\.(?P<name>[A-Za-z_$][\w$-]*)|\[(?P<index>-?\d+)\]|\[(?P<q>['"])(?P<quoted>.*?)(?P=q)\]""")


class JsonPathError(ValueError):
    pass


def parse_json_path(path: str) -> list[str | int]:
    """The subset of JSONPath a business key needs: ``$.a.b``, ``$.items[0].sku``, ``$['odd key']``."""
    path = path.strip()
    if not path.startswith("$"):
        raise JsonPathError(f"JSON path {path!r} must start with '$'")
    steps: list[str | int] = []
    pos = 1
    while pos < len(path):
        m = _SEGMENT.match(path, pos)
        if not m:
            raise JsonPathError(f"JSON path {path!r}: cannot read from position {pos} ({path[pos:]!r})")
        if m.group("name") is not None:
            steps.append(m.group("name"))
        elif m.group("index") is not None:
            steps.append(int(m.group("index")))
        else:
            steps.append(m.group("quoted"))
        pos = m.end()
    return steps


def json_path_get(document: Any, path: str) -> Any:
    node = document
    for step in parse_json_path(path):
        if isinstance(step, int):
            if not isinstance(node, list) or not -len(node) <= step < len(node):
                return None
            node = node[step]
        else:
            if not isinstance(node, dict) or step not in node:
                return None
            node = node[step]
    return node


def extract_business_key(cfg: BusinessKeyConfig, keys: str | None, body: str | bytes | None) -> str | None:
    """The business key of a message: its first KEYS entry, or a scalar found in its JSON body.
    None when there is nothing to find (no KEYS, a body that is not JSON, a path that leads nowhere)."""
    if cfg.from_ == "keys":
        if not keys:
            return None
        first = next((k for k in keys.split(KEY_SEPARATOR) if k), None)
        return first
    if body is None:
        return None
    if isinstance(body, bytes):
        body = body.decode("utf-8", errors="replace")
    try:
        document = json.loads(body)
    except ValueError:
        return None
    value = json_path_get(document, cfg.json_path or "$")
    if value is None or isinstance(value, (dict, list)):
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def route_for(cfg: CompensationConfig, topic: str | None, group: str) -> str | None:
    """The first route whose topic and group patterns match (``*`` and shell wildcards); None = SKIPPED."""
    for route in cfg.routes:
        if fnmatch.fnmatchcase(topic or "", route.topic) and fnmatch.fnmatchcase(group, route.group):
            return route.handler
    return None


def handler_for(cfg: CompensationConfig, topic: str | None, group: str, preset: str | None) -> tuple[str | None, str]:
    """(handler, why). The routes of the config in force decide, so that an operator who changes them and
    re-runs gets the new routing; the row's own ``compensation_handler`` (written by the reconstruction job)
    is used only when no route matches and it names a defined handler."""
    name = route_for(cfg, topic, group)
    if name is not None:
        return name, "route"
    if preset and preset in cfg.handlers:
        return preset, f"compensation_handler {preset!r} set on the dead letter"
    why = f"no compensation route matches topic {topic!r}, group {group!r}"
    if preset:
        why += f" (and its compensation_handler {preset!r} is not defined in compensation.handlers)"
    return None, why
