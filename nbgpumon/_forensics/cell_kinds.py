"""Each cell's GPU memory by kind at its end (and so what it kept, by kind, against the cell
before), at a cost per cell that does not grow with the cells run or, mostly, the namespace.

A whole holder walk costs tens of milliseconds on a large model, too much for every cell. So
each read starts from what the last one learned: the variables and ``Out`` entries that held
GPU memory then, and what each model and optimizer held itself (read again only once its
tensors' addresses or sizes change: ``OwnMemo``). A cell that moved no allocator and bound no
name carries the last figures over. So does one where nothing can have changed hands: no
framework allocated or freed on the GPU during it (torch counts what it hands out), no known
holder was bound again or deleted, and what it bound holds none of the GPU's memory (``lr =
0.1``, a plot, a function). Any other cell walks those holders, the names it bound and the
outputs it added (and IPython's last results and stored tracebacks). What that misses (a list
that held nothing and now holds tensors) shows as unexplained; when unexplained grows past a
few MiB since the last whole walk, one whole walk runs, and its roots are known from then on.
A cell that kept more than the leak threshold had its whole walk already (the leak verdict's):
it is used as is.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Collection
from typing import Any, NamedTuple

from .._ledger.kinds_notes import CarriedOver, KindsNote
from .._ledger.records import CellRecord, DeviceUsage
from .._sources.frameworks.holder_walk import in_category_order
from . import holder_scan
from .explain import UNEXPLAINED, allocated_by_kind

BLOCK = 512  # bytes: the allocators' smallest block and the unit of their sizes (_blocks)
WALK_AGAIN = 4 * 2**20  # unexplained growth (bytes, or 1% of allocated) that walks it all
KEYS_KEPT = 200_000  # storages remembered for the walk of new names (a few MB at most)
CARRIED = CarriedOver(bound_names=False)  # the cell moved no allocator and bound no name
UNTOUCHED = CarriedOver(bound_names=True)  # it allocated nothing and bound no GPU memory
_OUTPUT = re.compile(r"^Out\[(\d+)\]$")
# the other hidden references' names (always walked): not variables to walk by name
_HIDDEN_ROOT = re.compile(r"^(_{1,3}|_\d+|the last result|traceback frame .*)$")

Kinds = tuple[tuple[str, int], ...]
Notes = tuple[KindsNote, ...]


class _Cell(NamedTuple):
    """What a read of new names starts from: the cell's record, its devices to read (by
    place, with each framework's allocated bytes), the last read's kinds where they are of its
    start, and the names and outputs it bound."""

    record: CellRecord
    targets: dict[str, tuple[DeviceUsage, dict[str, int]]]
    before: dict[str, Kinds]
    changed: set[str]
    new_outputs: set[int]


@dataclasses.dataclass
class _Place:
    """What the last read learned of one device."""

    allocated: dict[str, int]  # framework -> bytes in use then
    kinds: Kinds  # by kind then, adding up to ``allocated``'s sum
    unexplained_at_walk: int = 0  # unexplained at the last whole walk


class CellKinds:
    """Reads each cell's memory by kind at its end (main thread, after the leak verdict)."""

    def __init__(self, shell: Any, device: str = "cuda", budget: float = 0.05) -> None:
        self.shell = shell
        self.device = device  # "cuda" (each GPU as "cuda:N"); "host" only in tests
        self.budget = budget
        self._places: dict[str, _Place] = {}
        self._roots: set[str] = set()  # user names that held memory at the last read
        self._outputs: set[int] = set()  # Out entries that did
        # what the models and optimizers read themselves, reused while their tensors stay put
        self.memo = holder_scan.OwnMemo()
        # the storages the last walk counted (and the cells since added): what a walk of a
        # cell's new names alone leaves out; empty past KEYS_KEPT
        self._keys: set[Any] = set()  # (changed in place: a model's thousands, not copied)
        # each holder's storages, where it had few (holder_scan.FEW_STORAGES; None: more)
        self._few: dict[str, tuple[holder_scan.RootStorage, ...] | None] = {}
        self.whole_walks = 0  # (for tests and bench/)
        self.narrow_walks = 0
        self.new_name_walks = 0

    def read(
        self,
        record: CellRecord,
        changes: Callable[[], tuple[set[str], set[int]]],
        whole: holder_scan.HolderScan | None = None,
    ) -> CellRecord:
        """``record`` with each measured GPU's kinds before and after. ``changes()``: the
        names the cell bound, bound again or deleted, and the ``Out`` entries it added (asked
        only where a framework has a GPU up); ``whole``: a whole walk of this device made at
        this cell's end, if any."""
        targets = {}
        for d in record.devices:
            place = self._place_of(d)
            allocated = _in_use(d, "allocated_after")
            if place is not None and any(f.allocated_after is not None for f in d.frameworks):
                targets[place] = (d, allocated)
        if not targets:
            return record
        changed, new_outputs = changes()
        before = {  # the last read's kinds, where they are of this cell's start
            p: self._places[p].kinds
            for p, (d, _) in targets.items()
            if p in self._places and self._places[p].allocated == _in_use(d, "allocated_before")
        }
        if whole is not None and whole.device != self.device:
            whole = None
        known = all(
            p in self._places and self._places[p].allocated == a for p, (_, a) in targets.items()
        )
        if whole is None and known and not changed and not new_outputs:
            kept = {p: (self._places[p].kinds, (CARRIED,)) for p in targets}
            return self._replace(record, targets, kept, before)
        if (
            whole is None
            and known
            and self._untouched(record, targets, before, changed)
            and not holder_scan.reaches(self.shell, self.device, changed, new_outputs, self.budget)
        ):
            kept = {p: (self._places[p].kinds, (UNTOUCHED,)) for p in targets}
            return self._replace(record, targets, kept, before)

        if whole is None:
            cell = _Cell(record, targets, before, changed, new_outputs)
            added = self._rebound(cell) if changed & self._roots else self._only_new_names(cell)
            if added is not None:
                return self._replace(record, targets, added, before)

        def by_kind(scan: holder_scan.HolderScan) -> dict[str, tuple[Kinds, Notes]]:
            return {p: self._kinds(scan, p, a) for p, (_, a) in targets.items()}

        if whole is not None:
            scan, found, is_whole = whole, by_kind(whole), True
        else:
            self.narrow_walks += 1
            scan = holder_scan.scan(
                self.shell,
                self.device,
                self.budget,
                names=self._roots | changed,
                outputs=self._outputs | new_outputs,
                memo=self.memo,
                keys=True,
            )
            found, is_whole = by_kind(scan), False
            if self._grew(found, targets):
                self.whole_walks += 1
                scan = holder_scan.scan(
                    self.shell, self.device, self.budget, memo=self.memo, keys=True
                )
                found, is_whole = by_kind(scan), True
        self._learn(scan, targets, found, is_whole)
        return self._replace(record, targets, found, before)

    # -- the pieces ---------------------------------------------------------------------
    def _only_new_names(self, cell: _Cell) -> dict[str, tuple[Kinds, Notes]] | None:
        """The kinds at the cell's end where everything it allocated is held by what it bound:
        the kinds at its start and those storages, found by walking its new names alone. That
        is where it freed nothing (each framework's allocated grew by all it handed out), bound
        no name that held memory before, and the new names' storages that no earlier walk
        counted add up, on each GPU, to exactly that growth (``t = torch.ones(1024)`` beside a
        large model: its 4 KiB, not the model's thousands of tensors). None otherwise: the
        usual walk decides."""
        record, targets, before, changed, new_outputs = cell
        if not self._keys or record.status != "ok" or changed & self._roots:
            return None
        if before.keys() != targets.keys():
            return None
        growth: dict[str, int] = {}
        for place, (d, _) in targets.items():
            total = 0
            for f in d.frameworks:
                grew = (f.allocated_after or 0) - (f.allocated_before or 0)
                if f.allocated_total is None or f.allocated_total != grew:
                    return None  # (it freed something, or its framework cannot say)
                total += grew
            growth[place] = total
        self.new_name_walks += 1
        scan = holder_scan.scan_new(
            self.shell, self.device, changed, new_outputs, self._keys, self.budget
        )
        if scan.partial is not None:
            return None
        new = {p: sum(scan.categories.get(p, {}).values()) for p in targets}
        if new != growth or set(scan.categories) - targets.keys():
            return None
        found: dict[str, tuple[Kinds, Notes]] = {}
        for place, (_, allocated) in targets.items():
            kinds = dict(before[place])
            for kind, size in scan.categories.get(place, {}).items():
                kinds[kind] = kinds.get(kind, 0) + size
            found[place] = self._keep_place(place, allocated, kinds)
        self._learn_new(scan)
        self._add_keys(scan.storages)
        return found

    def _rebound(self, cell: _Cell) -> dict[str, tuple[Kinds, Notes]] | None:
        """The kinds at the cell's end where it bound again (or deleted) holders of few
        storages: the kinds at its start, less what their old values held that is gone, plus
        what the names it bound hold that no walk counted yet (``t = torch.ones(1024)`` again
        beside a large model: a walk of ``t`` alone). Only where that accounts, on each GPU,
        for exactly what its allocators handed out and took back during it (in their blocks);
        None otherwise: the usual walk decides."""
        record, targets, before, changed, new_outputs = cell
        if not self._keys or record.status != "ok" or before.keys() != targets.keys():
            return None
        old: list[holder_scan.RootStorage] = []
        for name in changed & self._roots:
            held = self._few.get(name)
            if held is None:
                return None  # (a model, an optimizer, a long list: walked as usual)
            old += held
        handed: dict[str, int] = dict.fromkeys(targets, 0)  # during the cell, by place
        taken: dict[str, int] = dict.fromkeys(targets, 0)  # and given back
        for place, (d, _) in targets.items():
            for f in d.frameworks:
                if f.allocated_total is None:
                    return None  # (its framework cannot say what it handed out)
                grew = (f.allocated_after or 0) - (f.allocated_before or 0)
                handed[place] += f.allocated_total
                taken[place] += f.allocated_total - grew
        self.new_name_walks += 1
        scan = holder_scan.scan_new(
            self.shell, self.device, changed, new_outputs, self._keys, self.budget
        )
        if scan.partial is not None or any(held is None for held in scan.roots.values()):
            return None
        new = [s for held in scan.roots.values() if held for s in held if s[0] in scan.storages]
        gone = [s for s in old if s[0] not in scan.known_reached]
        if _blocks(new, targets) != handed or _blocks(gone, targets) != taken:
            return None  # (temporaries, something else freed, an old value alive elsewhere)
        found: dict[str, tuple[Kinds, Notes]] = {}
        for place, (_, allocated) in targets.items():
            kinds = dict(before[place])
            kinds.pop(UNEXPLAINED, None)
            for sign, storages in ((-1, gone), (1, new)):
                for _, size, kind, where in storages:
                    if where == place:
                        kinds[kind] = kinds.get(kind, 0) + sign * size
            kinds[UNEXPLAINED] = sum(allocated.values()) - sum(kinds.values())
            if any(size < 0 for size in kinds.values()):
                return None  # (the last read did not count them so: read again)
            found[place] = self._keep_place(place, allocated, kinds)
        ns = getattr(self.shell, "user_ns", None) or {}
        for name in changed:
            if name in ns:
                self._few[name] = ()  # (what it holds now, if anything: learned below)
            else:
                self._few.pop(name, None)
                self._roots.discard(name)
        self._learn_new(scan)
        self._keys.difference_update(s[0] for s in gone)
        self._add_keys(scan.storages)
        return found

    def _keep_place(
        self, place: str, allocated: dict[str, int], kinds: dict[str, int]
    ) -> tuple[Kinds, Notes]:
        """``kinds`` in their order, kept as ``place``'s figures now (a read of new names: the
        last whole walk's unexplained stays its baseline)."""
        names = [*in_category_order(kinds), UNEXPLAINED]
        ordered = tuple((k, kinds[k]) for k in names if kinds.get(k))
        known = self._places[place]
        self._places[place] = _Place(dict(allocated), ordered, known.unexplained_at_walk)
        return ordered, ()

    def _learn_new(self, scan: holder_scan.HolderScan) -> None:
        """Add to the known holders what a walk of a cell's new names reached."""
        for name in scan.reached:
            root = holder_scan.root_of(name)
            output = _OUTPUT.match(root)
            if output is not None:
                self._outputs.add(int(output.group(1)))
            elif not _HIDDEN_ROOT.match(root):
                self._roots.add(root)
        self._few.update(_variables(scan.roots))

    def _keep_keys(self, keys: frozenset[Any]) -> None:
        self._keys = set(keys) if len(keys) <= KEYS_KEPT else set()

    def _add_keys(self, keys: frozenset[Any]) -> None:
        self._keys |= keys
        if len(self._keys) > KEYS_KEPT:
            self._keys = set()

    def _place_of(self, d: DeviceUsage) -> str | None:
        if self.device == "host":
            return "host"
        return None if d.cuda_index is None else f"cuda:{d.cuda_index}"

    def _untouched(
        self,
        record: CellRecord,
        targets: dict[str, tuple[DeviceUsage, dict[str, int]]],
        before: dict[str, Kinds],
        changed: set[str],
    ) -> bool:
        """Whether no storage on the GPUs came or went during the cell, from its start as the
        last read left it (every framework there says it allocated nothing: only torch can),
        and no name that held GPU memory then was bound again or deleted: then only what the
        cell bound can have taken a storage over."""
        return (
            record.status == "ok"  # (a new stored traceback may hold what it did not)
            and before.keys() == targets.keys()
            and not changed & self._roots
            and all(f.allocated_total == 0 for d, _ in targets.values() for f in d.frameworks)
        )

    @staticmethod
    def _kinds(
        scan: holder_scan.HolderScan, place: str, allocated: dict[str, int]
    ) -> tuple[Kinds, Notes]:
        kinds, disagree = allocated_by_kind(
            scan.categories.get(place, {}), scan.frameworks.get(place, {}), allocated
        )
        notes: list[KindsNote] = list(disagree)
        if scan.partial is not None:
            notes.append(scan.partial)
        return tuple(kinds.items()), tuple(notes)

    def _grew(
        self,
        found: dict[str, tuple[Kinds, Notes]],
        targets: dict[str, tuple[DeviceUsage, dict[str, int]]],
    ) -> bool:
        """Whether the narrow walk (what it ``found`` by kind) left so much more unexplained
        than the last whole walk did that something it did not look at must hold memory now."""
        for place, (_, allocated) in targets.items():
            unexplained = dict(found[place][0]).get(UNEXPLAINED, 0)
            known = self._places.get(place)
            baseline = known.unexplained_at_walk if known is not None else 0
            if unexplained - baseline > max(WALK_AGAIN, sum(allocated.values()) // 100):
                return True
        return False

    def _learn(
        self,
        scan: holder_scan.HolderScan,
        targets: dict[str, tuple[DeviceUsage, dict[str, int]]],
        found: dict[str, tuple[Kinds, Notes]],
        is_whole: bool,
    ) -> None:
        """Keep what the next read starts from: the holders found, each device's figures, the
        storages counted."""
        self._roots = set()
        self._outputs = set()
        self._keep_keys(scan.storages)
        self._few = _variables(scan.roots)
        hidden = {h.name for h in scan.holders if h.hidden}
        for name in scan.reached:
            root = holder_scan.root_of(name)
            output = _OUTPUT.match(root)
            if output is not None:
                self._outputs.add(int(output.group(1)))
            elif name not in hidden and not _HIDDEN_ROOT.match(root):
                self._roots.add(root)
        for place, (_, allocated) in targets.items():
            kinds = found[place][0]
            before = self._places.get(place)
            baseline = before.unexplained_at_walk if before is not None else 0
            if is_whole:
                baseline = dict(kinds).get(UNEXPLAINED, 0)
            self._places[place] = _Place(dict(allocated), kinds, baseline)

    def _replace(
        self,
        record: CellRecord,
        targets: dict[str, tuple[DeviceUsage, dict[str, int]]],
        found: dict[str, tuple[Kinds, Notes]],
        before: dict[str, Kinds],
    ) -> CellRecord:
        """``record`` with each device's kinds: after, as found; before, the last read's where
        it was of the same allocated figures as this cell's start (else unknown: ())."""
        devices = []
        for d in record.devices:
            place = self._place_of(d)
            if place not in targets:
                devices.append(d)
                continue
            kinds, note = found[place]
            devices.append(
                dataclasses.replace(
                    d, kinds_before=before.get(place, ()), kinds_after=kinds, kinds_note=note
                )
            )
        return dataclasses.replace(record, devices=tuple(devices))


def _blocks(storages: list[holder_scan.RootStorage], places: Collection[str]) -> dict[str, int]:
    """The bytes ``storages`` take in their allocators' blocks, by place (of ``places``;
    elsewhere: -1, matching nothing). torch's and CuPy's pools hand out whole blocks of 512
    bytes, at least one (a larger one unsplit, where the rest was small, matches nothing)."""
    found = dict.fromkeys(places, 0)
    for _, size, _, place in storages:
        if place not in found:
            return {place: -1}
        found[place] += max(BLOCK, -(-size // BLOCK) * BLOCK)
    return found


def _variables(
    roots: dict[str, tuple[holder_scan.RootStorage, ...] | None],
) -> dict[str, tuple[holder_scan.RootStorage, ...] | None]:
    """The user's variables of a walk's roots (not ``Out[N]``, ``_`` or a traceback's)."""
    return {
        name: held
        for name, held in roots.items()
        if not _OUTPUT.match(name) and not _HIDDEN_ROOT.match(name)
    }


def _in_use(d: DeviceUsage, field: str) -> dict[str, int]:
    """Each framework's figure ``field`` on ``d`` (those that hold nothing left out: one that
    came up during the cell had nothing before it)."""
    figures = ((f.framework, getattr(f, field)) for f in d.frameworks)
    return {name: size for name, size in figures if size}
