"""Task-type vote: a cheap re-ranking of retrieved candidates (issue 13).

Examples of one task type support each other: a stored example is moved up when other examples
of its type also score high for the query. Over a pool of candidates (the top ``pool`` by the
memory's score), each candidate's score becomes

    s'(e) = s(e) + β · mean of the m best scores of e's task type in the pool

(a type with fewer than m candidates in the pool is padded with the pool's lowest score). With β
= 0 the order is the memory's. It needs no model and no training: the task types are stored with
every example.
"""

from __future__ import annotations

from collections.abc import Sequence

TYPE_VOTE_M = 2  # best scores per type that vote (chosen on the dev dialogues with 1, 2, 3)
TYPE_VOTE_POOL = 25  # candidates re-ranked (at least k)


def type_vote(found: Sequence[tuple[float, int]], types: Sequence[str], beta: float,
              m: int = TYPE_VOTE_M) -> list[tuple[float, int]]:
    """Re-rank ``(score, position)`` candidates (best first) by the type vote; ``types[position]`` is a type.

    Returns the same pairs (scores unchanged) in the new order.
    """
    if beta <= 0 or not found:
        return list(found)
    floor = min(s for s, _ in found)
    by_type: dict[str, list[float]] = {}
    for s, p in sorted(found, key=lambda sp: -sp[0]):
        by_type.setdefault(types[p], []).append(s)
    vote = {t: sum((v + [floor] * m)[:m]) / m for t, v in by_type.items()}
    return sorted(found, key=lambda sp: -(sp[0] + beta * vote[types[sp[1]]]))
