"""Recording cost: a LoopAgent with a completion marker, recorded through ``loopsim.record``.

Each run answers ``step k`` until the last iteration says ``DONE`` (10, 100, 1,000
iterations); the transcript is recorded and written out (``Transcript.to_json``, format
version 2). Rows: bytes per iteration, time per iteration to record + write, and the
growth of both from the smallest to the largest run (targets: bytes <= 1.2x, time <= 2x;
version 1, which wrote every request in full, grew quadratically: 4.4 KB -> 128 KB per
iteration from 10 to 400 iterations). The same loop recorded into a cassette
(``loopsim.Cassette``, model calls only) gives cassette bytes per model call at 10 and
1,000 calls (target: flat, growth <= 1.2x). Reading the file back, rendering it as text (``loopsim
show``) and diffing two readings of it are shown for reference (rendering and diffing
were quadratic: 87 -> 2,101 us per iteration for the text from 10 to 1,000 iterations).
"""

from __future__ import annotations

import gc
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import loopsim
from loopsim import CompletionMarkerLoopEvaluator, LoopAgent, LoopAgentOptions

try:  # run as a script (python benchmarks/run.py) or as a package module
    from _common import Row
except ImportError:  # pragma: no cover
    from benchmarks._common import Row

SIZES = (10, 100, 1000)


CASSETTE_SIZES = (10, 1000)


def _loop(
    iterations: int, client: Callable[[loopsim.ChatClient], loopsim.ChatClient] | None = None
) -> LoopAgent:
    script = [f"step {i}" for i in range(1, iterations)] + [f"step {iterations} DONE"]
    model: loopsim.ChatClient = loopsim.ScriptedChatClient(script)
    return LoopAgent(
        loopsim.Agent(model if client is None else client(model), name="worker"),
        CompletionMarkerLoopEvaluator("DONE"),
        LoopAgentOptions(max_iterations=iterations),
    )


def once(iterations: int) -> tuple[float, float, int, float, float]:
    """(record + write seconds, read seconds, bytes, show seconds, diff seconds) of one
    recorded run: ``show`` renders the text, ``diff`` compares two readings of the file."""
    agent = _loop(iterations)
    gc.collect()
    began = time.perf_counter()
    _, transcript = loopsim.record(agent.run, "go")
    text = transcript.to_json()
    recorded = time.perf_counter() - began
    began = time.perf_counter()
    read = loopsim.Transcript.from_json(text)
    reading = time.perf_counter() - began
    began = time.perf_counter()
    loopsim.render_text(read)
    showing = time.perf_counter() - began
    other = loopsim.Transcript.from_json(text)
    began = time.perf_counter()
    assert loopsim.diff_transcripts(read, other) is None
    diffing = time.perf_counter() - began
    return recorded, reading, len(text.encode("utf-8")), showing, diffing


def cassette_bytes(calls: int) -> int:
    """Bytes of the cassette a ``calls``-model-call loop records (``Cassette`` mode all)."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "loop.transcript.json"
        cassette = loopsim.Cassette(path, "all")
        agent = _loop(calls, lambda model: cassette.client("worker", model))
        loopsim.simulate(agent.run, "go")
        cassette.finish()
        return path.stat().st_size


def cassette_rows(sizes: Sequence[int] = CASSETTE_SIZES) -> list[Row]:
    """Cassette bytes per model call at each size, and their growth (target <= 1.2x)."""
    per = {n: cassette_bytes(n) / n for n in sizes}
    rows = [
        Row("recording", f"cassette n={n} model calls: bytes per model call", per[n], "B/call")
        for n in sizes
    ]
    small, large = min(sizes), max(sizes)
    if small != large:
        growth = per[large] / per[small]
        rows.append(
            Row(
                "recording",
                f"cassette bytes per model call growth {small}->{large}",
                growth,
                "x",
                target="<= 1.2x",
                met=growth <= 1.2,
            )
        )
    return rows


def run(
    sizes: Sequence[int] = SIZES, *, repeat: int = 5, log: Callable[[str], None] = print
) -> list[Row]:
    once(10)  # warm up (imports, first clock)
    rows: list[Row] = []
    per: dict[int, tuple[float, float]] = {}
    for n in sizes:
        samples = [once(n) for _ in range(repeat if n < 1000 else max(1, repeat // 2))]
        seconds = statistics.median(s[0] for s in samples)
        reading = statistics.median(s[1] for s in samples)
        showing = statistics.median(s[3] for s in samples)
        diffing = statistics.median(s[4] for s in samples)
        size = samples[0][2]
        per[n] = (size / n, seconds / n)
        log(f"recording n={n}: {size / n / 1024:.2f} KiB/iter, {seconds / n * 1e6:.0f} us/iter")
        case = f"LoopAgent + completion marker n={n}"
        rows += [
            Row("recording", f"{case}: transcript bytes per iteration", size / n, "B/iter"),
            Row("recording", f"{case}: record + write per iteration", seconds / n * 1e6, "us/iter"),
            Row("recording", f"{case}: read per iteration", reading / n * 1e6, "us/iter"),
            Row("recording", f"{case}: show (text) per iteration", showing / n * 1e6, "us/iter"),
            Row("recording", f"{case}: diff per iteration", diffing / n * 1e6, "us/iter"),
        ]
    small, large = min(sizes), max(sizes)
    if small != large:
        bytes_growth = per[large][0] / per[small][0]
        time_growth = per[large][1] / per[small][1]
        span = f"{small}->{large}"
        rows += [
            Row(
                "recording",
                f"bytes per iteration growth {span}",
                bytes_growth,
                "x",
                target="<= 1.2x",
                met=bytes_growth <= 1.2,
            ),
            Row(
                "recording",
                f"record + write time per iteration growth {span}",
                time_growth,
                "x",
                target="<= 2x",
                met=time_growth <= 2,
            ),
        ]
    return rows + cassette_rows()


if __name__ == "__main__":
    for row in run():
        print(row)
