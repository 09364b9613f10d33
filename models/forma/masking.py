"""Training masks (the paper's masking procedure; docs/forma.md, "Model").

Per training example:
  (i)  future: with p=0.5 the whole future block is hidden; otherwise each realized
       future tuple is hidden with p=0.95 (about 5% stay visible as pinned inputs).
       Query tokens without a realized value are always hidden.
  (ii) history: an identity instance (identity, quarter) is complete when every member
       item has a token at that quarter; each complete instance is selected with p=0.1
       and then k ~ U{2..N} of its N members are hidden (never exactly one, so no hidden
       value is recoverable from its own identity).
  (iii) tuples of items that join no complete instance anywhere in the window are
       hidden independently with p=0.05 (the scale token included).
Identities come in as arrays (from ref.identities), never from the database here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa


@dataclass(frozen=True)
class Identities:
    """Membership of the accounting identities: one row per identity, one column per item_id."""

    names: tuple[str, ...]
    members: tuple[np.ndarray, ...]  # item_ids of each identity (unique, sorted)
    matrix: np.ndarray  # [n_identities, width] int32 0/1

    @property
    def width(self) -> int:
        return int(self.matrix.shape[1])

    @classmethod
    def from_arrays(cls, identity: list | np.ndarray, item_id: list | np.ndarray) -> Identities:
        """From parallel arrays (identity name, member item_id), e.g. ref.identities columns."""
        identity = np.asarray(identity).astype(str)
        item_id = np.asarray(item_id, dtype=np.int64)
        names = tuple(sorted(set(identity.tolist())))
        members = tuple(np.unique(item_id[identity == n]) for n in names)
        width = int(item_id.max()) + 1 if len(item_id) else 1
        matrix = np.zeros((len(names), width), dtype=np.int32)
        for j, m in enumerate(members):
            matrix[j, m] = 1
        return cls(names, members, matrix)

    @classmethod
    def from_arrow(cls, table: pa.Table) -> Identities:
        """From an Arrow table with columns `identity` and `item_id`."""
        return cls.from_arrays(
            table.column("identity").to_pylist(), table.column("item_id").to_numpy()
        )

    @classmethod
    def empty(cls) -> Identities:
        return cls((), (), np.zeros((0, 1), dtype=np.int32))

    def to_dict(self) -> dict:
        return {
            "identity": [n for n, m in zip(self.names, self.members) for _ in m],
            "item_id": [int(i) for m in self.members for i in m],
        }

    @classmethod
    def from_dict(cls, d: dict) -> Identities:
        if not d["identity"]:
            return cls.empty()
        return cls.from_arrays(d["identity"], d["item_id"])


def complete_instances(
    rel_q: np.ndarray, item: np.ndarray, ids: Identities, lookback: int
) -> tuple[np.ndarray, np.ndarray]:
    """(complete [lookback, n_identities] bool, pos [lookback, width] token index or -1)."""
    width = ids.width
    slot = rel_q.astype(np.int64) + (lookback - 1)
    known = (item < width) & (slot >= 0) & (slot < lookback)
    pos = np.full((lookback, width), -1, dtype=np.int64)
    pos[slot[known], item[known]] = np.nonzero(known)[0]
    present = (pos >= 0).astype(np.int32)
    if not len(ids.members):
        return np.zeros((lookback, 0), dtype=bool), pos
    sizes = ids.matrix.sum(axis=1)
    complete = (present @ ids.matrix.T) == sizes
    return complete, pos


def mask_history(
    rel_q: np.ndarray,
    item: np.ndarray,
    ids: Identities,
    rng: np.random.Generator,
    *,
    lookback: int = 12,
    p_select: float = 0.1,
    p_ungrouped: float = 0.05,
) -> np.ndarray:
    """Hidden flags for one example's historical tokens (rel_q <= 0)."""
    n = len(rel_q)
    hidden = np.zeros(n, dtype=bool)
    if n == 0:
        return hidden
    complete, pos = complete_instances(rel_q, item, ids, lookback)
    grouped = np.zeros(max(ids.width, int(item.max()) + 1), dtype=bool)
    if complete.size:
        used = complete.any(axis=0)
        if used.any():
            grouped[: ids.width] = ids.matrix[used].any(axis=0)
        selected = complete & (rng.random(complete.shape) < p_select)
        for slot, j in zip(*np.nonzero(selected)):
            members = ids.members[j]
            k = int(rng.integers(2, len(members) + 1))
            chosen = rng.choice(members, size=k, replace=False)
            hidden[pos[slot, chosen]] = True
    ungrouped = ~grouped[item]
    hidden |= ungrouped & (rng.random(n) < p_ungrouped)
    return hidden


def mask_future(
    observed: np.ndarray,
    rng: np.random.Generator,
    *,
    p_block: float = 0.5,
    p_tuple: float = 0.95,
) -> np.ndarray:
    """Hidden flags for one example's future tokens; unrealized queries are always hidden."""
    n = len(observed)
    if rng.random() < p_block:
        return np.ones(n, dtype=bool)
    return (rng.random(n) < p_tuple) | ~observed


def sample_queries(
    observed: np.ndarray, hidden: np.ndarray, rng: np.random.Generator, cap: int = 0
) -> np.ndarray:
    """Which future tokens a training set keeps under "context" attention: the visible
    ones (pins, inputs to everything), and of the hidden ones only those with a realized
    target (a target-less query changes nothing else there), at most `cap` of them (a
    uniform sample; 0 = all). Returns a keep mask over the future tokens."""
    keep = ~hidden
    target = np.nonzero(hidden & observed)[0]
    if cap and len(target) > cap:
        target = rng.choice(target, cap, replace=False)
    keep[target] = True
    return keep
