"""An independent oracle for MIG layouts: every multiset of profiles that fits one GPU,
found by walking the memory slices in order rather than by the code's placement search."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from bot.domain.mig.profiles import GpuFamily, Profile

Layout = frozenset[tuple[Profile, int]]


def placeable(family: GpuFamily) -> set[Layout]:
    """Each layout one GPU of `family` can hold, as a multiset (profile, count)."""

    def walk(i: int) -> Iterator[list[Profile]]:
        if i >= family.memory_slices:
            yield []
            return
        yield from walk(i + 1)  # slice i stays empty
        for p in family.profiles:
            if i in p.starts:
                for rest in walk(i + p.memory_slices):
                    yield [p, *rest]

    return {
        frozenset(Counter(layout).items())
        for layout in walk(0)
        if layout
        and len(layout) <= family.max_partitions
        and sum(p.compute_slices for p in layout) <= family.compute_slices
    }
