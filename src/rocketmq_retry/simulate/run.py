"""One simulation run: build the landing in a temp directory, write logs, dumps and ground truth, then commit."""

from __future__ import annotations

import json
import shutil
import time
from collections import Counter
from dataclasses import dataclass, field

from rocketmq_retry.config import Config
from rocketmq_retry.logformats import java
from rocketmq_retry.simulate import truth_dates, world
from rocketmq_retry.simulate.collect import DailyCollector
from rocketmq_retry.simulate.model import CLIENT_4X, CLIENT_5X, GRPC, GroupRun
from rocketmq_retry.simulate.output import Landing
from rocketmq_retry.simulate.scenario import Settings
from rocketmq_retry.simulate.sim import Simulator

TRUTH_DIR = "_truth"
# where the hosts' files grow in a daily layout, only for the collector to copy from (removed before the commit)
WHOLE_RUN_DIR = ".whole-run"


@dataclass
class Summary:
    lines: int
    files: int
    messages: int
    lifecycles: int
    seconds: float
    final_states: dict[str, int] = field(default_factory=dict)

    @property
    def lines_per_second(self) -> float:
        return self.lines / self.seconds if self.seconds > 0 else 0.0


def simulate(config: Config, settings: Settings) -> Summary:
    started = time.perf_counter()
    landing = Landing(settings.out, settings.force)
    try:
        daily = settings.collect == "daily"
        sim = Simulator(config, settings, landing.tmp / WHOLE_RUN_DIR if daily else landing.tmp)
        collector = DailyCollector(sim, landing.tmp) if daily else None
        sim.run()
        files = sim.sinks.close()
        if collector is not None:
            shutil.rmtree(landing.tmp / WHOLE_RUN_DIR)
            files = list(collector.written)
        else:
            files += world.write_dumps(landing.tmp, list(sim.brokers.values()), world.ALL_DUMPS)
        sim.finish_truth()
        files += sim.truth.write(landing.tmp / TRUTH_DIR)
        if sim.multi_day:
            files += truth_dates.write(landing.tmp / TRUTH_DIR, sim.truth, sim.days)
        states = Counter(row[23] for row in sim.truth.lifecycles)
        elapsed = time.perf_counter() - started
        dump_lines = sum(len(copies) for b in sim.brokers.values() for copies in b.dumps.values())
        summary = Summary(
            lines=sim.sinks.lines + dump_lines,  # every line of every format (logs, trace export, message dumps)
            files=len(files),
            messages=settings.messages * len(sim.days),
            lifecycles=len(sim.lifecycles),
            seconds=elapsed,
            final_states=dict(sorted(states.items())),
        )
        _write_manifest(landing, sim, settings, summary, collector)
        landing.commit()
        return summary
    except BaseException:
        landing.abort()
        raise


def suggested_sources(sim: Simulator) -> list[dict[str, str]]:
    """``sources:`` entries matching this landing's layout (host directories per client family)."""
    out: list[dict[str, str]] = []
    hosts: dict[str, list[str]] = {CLIENT_4X: [], CLIENT_5X: [], GRPC: []}
    spring_files: set[str] = set()
    for inst in sim.all_instances():
        hosts[inst.kind].append(inst.host.name)
        if inst.app == "spring" and inst.run is not None:
            spring_files.add("stdout.log" if inst.run.pattern.console else "app.log")
    for h in sorted(set(hosts[CLIENT_4X])):
        out.append({"format": "rocketmq-client-4x", "path": f"{h}/logs/rocketmqlogs/rocketmq_client*.log*",
                    "timezone": sim.zone4x})  # fmt: skip
    for h in sorted(set(hosts[CLIENT_5X])):
        out.append({"format": "rocketmq-client-5x", "path": f"{h}/logs/rocketmqlogs/**/rocketmq_client*.log*"})
    # no consumer_group: a gRPC listener line that names none gets it from its host's own evidence (the SDK's
    # consume-service line) or the one gRPC group the config declares (docs/reconstruction.md, "Attribution")
    for h in sorted(set(hosts[GRPC])):
        out.append({"format": "rocketmq-grpc-client", "path": f"{h}/logs/rocketmq/rocketmq-client*.log*"})
    for name in sorted(spring_files):
        out.append({"format": "spring-listener", "path": f"*/logs/{name}*", "timezone": sim.zone_app})
    out.append({"format": "broker", "path": "rmq-broker-*/logs/rocketmqlogs/**/broker*.log*"})
    out.append({"format": "broker-stats", "path": "rmq-broker-*/logs/rocketmqlogs/**/stats*.log*"})
    out.append({"format": "trace", "path": "trace/*.trace*"})
    out.append({"format": "message-dump", "path": "dumps/*.jsonl*"})
    return out


def _client_facts(g: GroupRun) -> dict[str, object]:
    """What shapes the group's lines: client library, rocketmq-spring release and log pattern, start-up day."""
    if g.run is None or g.kind == GRPC:
        return {}
    out: dict[str, object] = {"client_version": java.version_text(g.run.client_version)}
    if g.run.app == "spring":
        out["spring_version"] = g.run.spring_version
        out["spring_pattern"] = g.run.pattern.name
    if g.run.started_days_before is not None:
        out["started_days_before"] = g.run.started_days_before
    return out


def _write_manifest(
    landing: Landing, sim: Simulator, settings: Settings, summary: Summary, collector: DailyCollector | None
) -> None:
    folder = landing.tmp / TRUTH_DIR
    run_over_dates: dict[str, object] = {}
    if sim.multi_day:
        run_over_dates = {
            "dates": [day.isoformat() for day, _start, _end in sim.days],
            "collect": settings.collect,
            "messages_per_date": settings.messages,
        }
    if collector is not None:
        files = dict(collector.lines)
    else:
        files = {
            str(p.relative_to(landing.tmp)): sim.sinks.files[str(p.relative_to(landing.tmp))].lines
            for p in sorted(landing.tmp.rglob("*"))
            if p.is_file() and str(p.relative_to(landing.tmp)) in sim.sinks.files
        }
    manifest = {
        "date": settings.date.isoformat(),
        **run_over_dates,
        "seed": settings.seed,
        "messages": summary.messages,
        "timezone": sim.zone,
        "client4x_timezone": sim.zone4x,
        "app_timezone": sim.zone_app,
        "lines": summary.lines,
        "lifecycles": summary.lifecycles,
        "final_states": summary.final_states,
        "groups": {
            g.name: {
                "client": g.kind,
                "app": g.scenario.app,
                "application": g.run.name if g.run is not None else "",
                "topic": g.scenario.topic,
                "hosts": [i.host.name for i in g.instances],
                "max_reconsume_times": g.max_reconsume,
                **_client_facts(g),
            }
            for g in sim.groups
        },
        "files": files,
        "sources": suggested_sources(sim),
    }
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=False) + "\n", encoding="utf-8")
