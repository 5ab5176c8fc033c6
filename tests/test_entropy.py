"""uuid4 and the global random generator inside a simulation: seeded, never patterned."""

# ruff: noqa: S311, S603 - the tests draw from `random` on purpose and run sys.executable

from __future__ import annotations

import random
import subprocess
import sys
import textwrap
import threading
import uuid
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import loopsim
from loopsim import _entropy

DRAWS = 10_000


async def many_uuids(n: int = DRAWS) -> list[uuid.UUID]:
    return [uuid.uuid4() for _ in range(n)]


def test_ids_are_well_formed_version_4_uuids() -> None:
    values = loopsim.simulate(many_uuids, 200)
    assert all(value.version == 4 for value in values)
    assert all(value.variant == uuid.RFC_4122 for value in values)
    assert len(set(values)) == 200


def test_every_random_bit_is_random() -> None:
    # 122 bits are random in a version-4 uuid; each is set in about half of 10,000 draws
    # (a counter-based id sets almost none of the high ones: this fails on it)
    values = loopsim.simulate(many_uuids)
    fixed = (0xF << 76) | (0x3 << 62)
    counts = Counter(bit for v in values for bit in range(128) if v.int >> bit & 1)
    for bit in range(128):
        if fixed >> bit & 1:
            continue
        assert 4_600 < counts[bit] < 5_400, f"bit {bit} set in {counts[bit]} of {DRAWS} draws"


def test_short_ids_cut_from_them_collide_no_more_than_chance() -> None:
    # 10,000 draws of 8 hex digits (32 bits): about 0.012 collisions are expected
    values = loopsim.simulate(many_uuids)
    for width in (8, 12, 16):
        prefixes = Counter(v.hex[:width] for v in values)
        assert max(prefixes.values()) == 1, f"hex[:{width}] collided"
    trades = {f"TRADE-{v.hex[:8]}" for v in values}
    assert len(trades) == DRAWS


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**32))
def test_the_same_seed_gives_the_same_ids_and_another_seed_others(seed: int) -> None:
    first = loopsim.simulate(many_uuids, 5, seed=seed)
    assert first == loopsim.simulate(many_uuids, 5, seed=seed)
    assert set(first).isdisjoint(loopsim.simulate(many_uuids, 5, seed=seed + 1))


def test_ids_outside_a_simulation_are_the_standard_librarys() -> None:
    loopsim.simulate(many_uuids, 1)  # the swap is in place from the first simulation on
    inside = loopsim.simulate(many_uuids, 3)
    outside = [uuid.uuid4() for _ in range(3)]
    assert set(outside).isdisjoint(inside)
    assert outside[0] != uuid.uuid4()
    assert uuid.uuid4.__name__ == "uuid4"


def test_a_thread_started_during_a_simulation_gets_standard_ids() -> None:
    seen: dict[str, uuid.UUID] = {}

    def in_thread() -> None:
        seen["thread"] = uuid.uuid4()

    async def main() -> uuid.UUID:
        thread = threading.Thread(target=in_thread)
        thread.start()
        thread.join()
        return uuid.uuid4()

    first = loopsim.simulate(main)
    assert first == loopsim.simulate(main)
    assert seen["thread"] not in loopsim.simulate(many_uuids, 3)


def test_a_reference_bound_before_loopsim_was_imported_is_seeded_too() -> None:
    # a user module that did `from uuid import uuid4` before importing loopsim
    program = textwrap.dedent(
        """
        from uuid import uuid4
        import uuid
        held = uuid.uuid4

        import loopsim

        async def ids():
            return [str(uuid4()), str(held()), str(uuid.uuid4())]

        a, b = loopsim.simulate(ids), loopsim.simulate(ids)
        assert a == b, (a, b)
        assert len(set(a)) == 3
        print("ok")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


async def draws() -> tuple[float, int, list[int]]:
    items = list(range(10))
    random.shuffle(items)
    return random.random(), random.randint(0, 10**9), items


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_the_global_random_generator_is_seeded_for_the_run(backend: str) -> None:
    first = loopsim.simulate(draws, backend=backend, seed=3)
    assert first == loopsim.simulate(draws, backend=backend, seed=3)
    assert first != loopsim.simulate(draws, backend=backend, seed=4)
    assert first == loopsim.simulate(draws, backend="asyncio", seed=3)


def test_the_global_random_state_is_restored_after_the_run() -> None:
    random.seed(12345)
    expected = [random.random() for _ in range(3)]
    random.seed(12345)
    got = [random.random()]
    loopsim.simulate(draws)
    got += [random.random(), random.random()]
    assert got == expected


def test_the_state_is_restored_when_the_run_fails() -> None:
    async def boom() -> None:
        random.random()
        raise RuntimeError("boom")

    random.seed(1)
    expected = random.random()
    random.seed(1)
    with pytest.raises(RuntimeError, match="boom"):
        loopsim.simulate(boom)
    assert random.random() == expected


def test_the_swap_keeps_the_function_object_and_can_be_undone() -> None:
    from loopsim import _trace

    def in_a_trace() -> uuid.UUID:
        with _trace.bind(_trace.Trace(seed=0)):
            return uuid.uuid4()

    function = uuid.uuid4
    try:
        _entropy.uninstall_uuid4()
        assert in_a_trace() != in_a_trace()  # the standard body: random
    finally:
        _entropy.install_uuid4()
    assert uuid.uuid4 is function
    assert in_a_trace() == in_a_trace()


def test_cpython_lets_the_uuid4_body_be_swapped() -> None:
    # upgrade guard: the swap relies on uuid4 being a plain function without a closure
    assert isinstance(_entropy.original_uuid4, type(test_cpython_lets_the_uuid4_body_be_swapped))
    assert _entropy.original_uuid4.__closure__ is None
    assert _entropy.original_uuid4().version == 4


def test_a_module_imported_during_the_first_run_does_not_shift_its_ids(tmp_path) -> None:
    # otel-style module constants (key = "x-" + str(uuid4())) made by a lazy import
    (tmp_path / "lazy_constants.py").write_text("import uuid\nKEY = str(uuid.uuid4())\n")
    sys.path.insert(0, str(tmp_path))
    try:

        async def first_use() -> list[str]:
            import lazy_constants  # noqa: F401 - imported for its side effect, the first time

            return [str(uuid.uuid4())]

        assert loopsim.simulate(first_use) == loopsim.simulate(first_use)
        assert sys.modules["lazy_constants"].KEY not in loopsim.simulate(many_uuids, 5)
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("lazy_constants", None)
