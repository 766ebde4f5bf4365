"""The per-date layout (``--collect daily``): ``<out>/<date>/`` holds what a log collector copying every host's log
directories at the end of that date (local midnight in the config's timezone) would have, the files as they stood
at that moment, plus that date's export of the stored messages (``dumps/*.jsonl.gz``: the copies whose store time
falls on the date, each dump line's ``MAX_OFFSET`` the queue's at the collection; compressed unless ``--no-gzip``).

So a Spring Boot ``app.log`` rolled at midnight shows up as ``app.log.<date>.0.gz`` in the next date's folder; a
file rolled by size under a fixed window (``otherdays/stats.1.log.gz``) carries different lines under one name in two
folders; a rolled file is copied into every later folder. Each file is cut where its writer stood at the true
midnight: a line written just before it by a host whose clock runs ahead is dated the next date yet is in this copy,
and a consume thread's line written just after it with a slightly earlier timestamp is only in the next date's.
No folder holds the horizon's tail after the last date's end: the run simulates it, so that both layouts come from
the same run, but a backfill of the dates never reads it (``_truth/*_by_date.csv`` stop at the last date too).

The collection is an observer of the event loop, not an event: it draws nothing and takes no place among ties, so
the daily layout is a cut of exactly the run the whole layout writes.
"""

from __future__ import annotations

import pathlib

from rocketmq_retry.simulate import world
from rocketmq_retry.simulate.sim import Simulator


class DailyCollector:
    def __init__(self, sim: Simulator, root: pathlib.Path) -> None:
        self.sim = sim
        self.root = root
        self.written: list[pathlib.Path] = []
        self.lines: dict[str, int] = {}  # "<date>/<file>" -> lines of each current (not rolled) log file
        self._dates = {end: (day, start) for day, start, end in sim.days}
        sim.loop.observe(sorted(self._dates), self.collect)

    def collect(self, cut: int) -> None:
        day, start = self._dates[cut]
        folder = self.root / day.isoformat()
        sinks = self.sim.sinks
        self.written.extend(sinks.copy_as_now(folder))
        for rel in sorted(sinks.files):
            self.lines[f"{folder.name}/{rel}"] = sinks.files[rel].current_lines
        # the first date's export also holds anything stored before it (nothing is, today)
        window = (start if day != self.sim.days[0][0] else 0, cut)
        brokers = list(self.sim.brokers.values())
        self.written.extend(world.write_dumps(folder, brokers, world.ALL_DUMPS, window, self.sim.s.gzip))
