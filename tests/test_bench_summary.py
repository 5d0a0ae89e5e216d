"""`make bench`'s summary table: every figure a bench measures sits on a row beside its own goal and verdict."""

from __future__ import annotations

from bench import Figure, Headline
from bench.__main__ import Outcome, summary


def outcome(name: str, headline: Headline | None, rc: int = 0) -> Outcome:
    return Outcome(name, rc, 1.5, headline.as_dict() if headline else None, "", "")


def row(table: str, start: str) -> str:
    return next(line for line in table.splitlines() if line.startswith(start))


def test_each_figure_of_a_bench_has_its_row_beside_its_goal_and_verdict() -> None:
    h = Headline("ack p99 0.9x bare Bolt", "ack p99 <= 1.2x", True,
                 more=(Figure("first step p95", "180 ms at 50 threads", "< 150 ms", False),
                       Figure("RSS end vs 10 min", "+3.0 % over 5 min", "<= +5 % over >= 1 h", None)))
    table = summary([outcome("slack_latency", h), outcome("recall", Headline("p95 40 ms", "p95 < 100 ms", True))],
                    quick=False)
    first, second, third = row(table, "slack_latency"), row(table, "  first step p95"), row(table, "  RSS end vs")
    assert "ack p99 0.9x" in first and "met" in first and "NOT" not in first
    assert "180 ms at 50 threads" in second and "< 150 ms" in second and "NOT met" in second
    assert "+3.0 %" in third and "NOT" not in third and "met" not in third  # no verdict: a short run cannot say
    assert row(table, "recall").split()[-2] == "met"
    lines = table.splitlines()
    assert lines.index(second) == lines.index(first) + 1 and lines.index(third) == lines.index(second) + 1


def test_a_quick_run_judges_no_figure_and_a_crashed_bench_says_so() -> None:
    h = Headline("p95 40 ms", "p95 < 100 ms", True, more=(Figure("build", "9 s", "< 60 s", True),))
    table = summary([outcome("recall", h), outcome("soak", None, rc=1)], quick=True)
    assert "(quick)" in row(table, "recall") and "(quick)" in row(table, "  build")
    assert "CRASHED" in row(table, "soak") and "FAILED" in row(table, "soak")
