from collections import Counter

from pirex.runner import plan


def test_interleaved_runs_every_variant_once_per_repetition():
    steps = plan.make(("native", "docker", "docker-host-network"), 20, "interleaved", seed=3)
    assert len(steps) == 60
    for r in range(20):
        block = steps[r * 3 : r * 3 + 3]
        assert {s["repetition"] for s in block} == {r}
        assert sorted(s["variant"] for s in block) == ["docker", "docker-host-network", "native"]
    # the order really varies between repetitions, and is the same for the same seed
    assert len({tuple(s["variant"] for s in steps[r * 3 : r * 3 + 3]) for r in range(20)}) > 1
    assert steps == plan.make(("native", "docker", "docker-host-network"), 20, "interleaved", seed=3)


def test_sequential_keeps_the_papers_order():
    steps = plan.make(("native", "docker"), 2, "sequential", seed=0)
    assert [(s["variant"], s["repetition"]) for s in steps] == [
        ("native", 0),
        ("native", 1),
        ("docker", 0),
        ("docker", 1),
    ]
    assert Counter(s["variant"] for s in steps) == {"native": 2, "docker": 2}
