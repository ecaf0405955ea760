"""``%gpumon``'s subcommands as data: each one's name, arguments and help, declared once.

The magic's help (``%gpumon?``) is written from this table, and :func:`parse_arguments` checks
every subcommand's arguments against it: a subcommand is a row here plus the method that runs
it (``GPUMonMagics._<name>``), not a parser of its own.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from IPython.core.error import UsageError

from .._api.exporter import DEFAULT_PORT
from .._sources.frameworks import Framework, frameworks

HELP = "%gpumon? lists the commands"

# How a subcommand takes the words after its name
WORDS = "words"  # checked against its `arguments`, one word each
REST = "rest"  # as they came, a path or paths (expanded and unquoted by the subcommand)
LINE = "line"  # the rest of the line verbatim, before any parsing (a label, PromQL matchers)


@dataclass(frozen=True)
class Argument:
    """One word a subcommand takes: what it accepts, and whether it may be left out."""

    accepts: Callable[[str], bool]
    optional: bool = True


def _positive(word: str) -> bool:
    return word.isdigit() and int(word) > 0


ON_OFF = Argument(lambda w: w in ("on", "off"))
POSITIVE = Argument(_positive)  # a positive whole number
ANY = Argument(lambda w: True)


@dataclass(frozen=True)
class Subcommand:
    """A ``%gpumon`` subcommand: ``name`` as typed, ``help`` the (synopsis, lines) entries
    ``%gpumon?`` lists for it, and its arguments with what a wrong one is told (``usage``;
    "": it takes none)."""

    name: str
    help: tuple[tuple[str, str], ...] = ()
    arguments: tuple[Argument, ...] = ()
    takes: str = WORDS
    usage: str = ""
    called: str | None = None  # how "takes no arguments" names it (default: its name)

    @property
    def method(self) -> str:
        """The ``GPUMonMagics`` method that runs it."""
        return "_" + self.name.lstrip("-")


def _framework_words() -> dict[str, str]:
    """What the help says of the framework plug-ins, from their labels: which can have the GPU
    up ("torch, JAX or CuPy"), whose caches ``free`` gives back, and whose profiler, memory
    history and NVTX marks the commands use (the first plug-in with each)."""
    plugins = frameworks()
    labels = [f.label for f in plugins]
    caches = [f.cache_words for f in plugins if f.cache_words]

    def first(has: Callable[[Framework], object]) -> str:
        return next((f.label for f in plugins if has(f)), "a framework")

    return {
        "frameworks": _either(labels) or "a framework",
        "caches": " and ".join(caches) or "each framework's idle cache",
        "profiler": first(lambda f: f.profiler),
        "history": first(lambda f: f.memory_history),
        "nvtx": first(lambda f: f.nvtx),
    }


def _either(words: list[str]) -> str:
    return ", ".join(words[:-1]) + f" or {words[-1]}" if len(words) > 1 else "".join(words)


# (the plug-ins imported with the package are registered by now)
_NAMED = _framework_words()


SUBCOMMANDS = (
    Subcommand("show", (("%gpumon", "the live chart, cell table and status (a widget)"),),
               called=""),
    Subcommand("--static", (("%gpumon --static", """\
the same as a picture updated about once a second (chosen
by itself in Colab, where widget updates from a
background thread don't show); in a terminal, both print
the chart's text once"""),)),
    Subcommand("snapshot", (("%gpumon snapshot",
                             "text: devices now, processes, the latest cells"),)),
    Subcommand("status", (("%gpumon status",
                           "devices, sources, interval; what is unavailable and why"),)),
    Subcommand("summary", (("%gpumon summary on|off",
                            "print a one-line summary after every cell"),),
               (ON_OFF,), usage="usage: %gpumon summary on|off"),
    Subcommand("cells", (("%gpumon cells [N]",
                          "the ledger of the last N cells (default 20), newest first"),),
               (POSITIVE,), usage="usage: %gpumon cells [N], N a positive whole number"),
    Subcommand("holders", (("%gpumon holders [DEV]", """\
what holds memory now, biggest first: variables, Out[N], _,
stored tracebacks; DEV cuda, cuda:N or host (default: cuda
once {frameworks} has the GPU up, else host)""".format_map(_NAMED)),),
               (ANY,), usage="usage: %gpumon holders [cuda | cuda:N | host]"),
    Subcommand("explain", (("%gpumon explain [N]", """\
this kernel's GPU memory now by what it is: parameters,
gradients, optimizer state, buffers, other arrays, outputs
and tracebacks, unexplained, each framework's unused
reserve, the CUDA context; adding up to the driver's
figure for this process. N: cell N's instead, at its end
(and what it kept, by kind) and at its peak (what stayed,
and the activations and temporaries it freed)"""),),
               (POSITIVE,), usage="usage: %gpumon explain [N], N a cell's number"),
    Subcommand("free", (("%gpumon free", """\
drop what IPython's hidden references hold (outputs with
arrays, _, stored tracebacks), collect garbage, give back
{caches}; your
variables are never touched""".format_map(_NAMED)),)),
    Subcommand("record", (("%gpumon record PATH", """\
record samples, cells and marks to an SQLite file
(crash-safe; nbgpumon.load(PATH) reads it back): a new
file or an earlier recording, never any other file"""),
                          ("%gpumon record off",
                           "stop recording; %gpumon record says where it records")), takes=REST),
    Subcommand("report", (("%gpumon report [PATH]", """\
an interactive report (bqplot): the timeline with cell
bands, per-cell bars; brush a time range to list its cells
(in a terminal: the HTML page, written to a new file)"""),), takes=REST),
    Subcommand("profile", (("%%gpumon profile [N]", """\
run the cell under {profiler}'s profiler: the top N (15)
operators by CUDA memory (CPU memory without CUDA)""".format_map(_NAMED)),),
               (POSITIVE,), usage="usage: %%gpumon profile [N], N a positive whole number"),
    Subcommand("compare", (("%gpumon compare A [B]", """\
run B (default: this session) against recording A, cell
by cell: the change in peak, kept, time and utilization,
cells of one run only, and the regressions flagged
(nbgpumon.compare(A, B) for the DataFrame and report)"""),), takes=REST),
    Subcommand("advise", (("%gpumon advise [PATH]", """\
hints from what was measured (this session, or a
recording), each citing its numbers; none without evidence"""),), takes=REST),
    Subcommand("whatif", (("%gpumon whatif NAME [FIX ...] [--size N]", """\
run the step NAME (a function in the namespace) as it is
and under each fix (default: every one that applies: amp,
checkpointing, no_grad, expandable_segments, foreach=False,
fused=True, accumulate=K with --size), each a tracked
region: what each saves of its peak and its time
(nbgpumon.whatif(step) for the result's rows)"""),), takes=LINE,
               usage="usage: %gpumon whatif NAME [FIX ...] [--size N]"),
    Subcommand("trace", (("%gpumon trace on|off", """\
record CUDA allocation stacks ({history}'s memory history):
after each cell, what it left behind by cell and line""".format_map(_NAMED)),),
               (Argument(ON_OFF.accepts, optional=False),), usage="usage: %gpumon trace on|off"),
    Subcommand("nvtx", (("%gpumon nvtx on|off", """\
an NVTX range around each cell, named [N] first line
(and each track() region), once {nvtx} has CUDA up:
an Nsight Systems capture is labelled by cell""".format_map(_NAMED)),),
               (ON_OFF,), usage="usage: %gpumon nvtx on|off (alone: whether it is on)"),
    Subcommand("export", (("%gpumon export [PORT]", f"""\
serve this kernel's metrics for Prometheus at
http://127.0.0.1:PORT/metrics (default {DEFAULT_PORT}; the address
is GPUMon.export_host); alone, it says where it serves,
or starts on the default port"""),
                          ("%gpumon export off", "stop the exporter and free its port")),
               (Argument(lambda w: w == "off" or w.isdigit()),),
               usage=f"usage: %gpumon export [PORT|off], PORT a number from 1 to 65535 "
               f"(default {DEFAULT_PORT})"),
    Subcommand("start", (("%gpumon start | stop",
                          "start or stop the sampler thread (the ledger keeps going)"),)),
    Subcommand("stop"),
    Subcommand("mark", (("%gpumon mark LABEL", "put a labelled marker on the timeline"),),
               takes=LINE),
    Subcommand("cluster", (("%gpumon cluster URL [--match MATCHERS] [--job NAME] "
                            "[--host-label LABEL]", """\
read other nodes' GPUs from a Prometheus server (the
DCGM exporter's metrics, and nbgpumon's exported ones);
MATCHERS narrow it as PromQL writes them, e.g.
--match 'Hostname=~"node-1.*"'; LABEL names a GPU's
node (default Hostname); the chart gets a host
selector, the snapshot and status list the nodes"""),
                           ("%gpumon cluster",
                            "every node and GPU now; %gpumon cluster off stops")), takes=LINE),
)  # fmt: skip
BY_NAME = {c.name: c for c in SUBCOMMANDS}
# What a user types after %gpumon ("show" is plain %gpumon, --static an option of it)
COMMAND_NAMES = [c.name for c in SUBCOMMANDS if c.name != "show" and not c.name.startswith("-")]

_SYNOPSIS = 24  # the width of the help's first column


def help_text() -> str:
    """The magic's description as ``%gpumon?`` shows it: every subcommand's help entries."""
    lines = ["Show GPU state and the per-cell memory ledger (nbgpumon).", "", "Commands:"]
    pad = " " * (2 + _SYNOPSIS)
    for command in SUBCOMMANDS:
        for synopsis, text in command.help:
            first, *more = text.split("\n")
            if len(synopsis) < _SYNOPSIS:
                lines.append(f"  {synopsis:<{_SYNOPSIS}}{first}")
            else:  # too wide for its column: on a line of its own
                lines += [f"  {synopsis}", pad + first]
            lines += [pad + line for line in more]
    lines += ["", "Settings: %config GPUMon (list), e.g. %config GPUMon.interval = 0.25", ""]
    return "\n".join(lines)


def parse_arguments(command: Subcommand, words: list[str]) -> list[str]:
    """``words`` if ``command`` takes them (each accepted by its argument, none missing);
    else a UsageError with its ``usage`` line, or that it takes none."""
    if command.takes != WORDS:
        return words
    if not command.arguments:
        if words:
            name = command.name if command.called is None else command.called
            got = " ".join(words)
            raise UsageError(f"%gpumon {name} takes no arguments (got {got!r}); {HELP}")
        return words
    required = sum(not a.optional for a in command.arguments)
    if not required <= len(words) <= len(command.arguments) or not all(
        a.accepts(w) for a, w in zip(command.arguments, words, strict=False)
    ):
        raise UsageError(command.usage)
    return words
