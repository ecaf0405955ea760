"""A refused setting, live (``%config``) or configured (a config file), is one line and never
breaks the next load: ``%reload_ext`` and ``%unload_ext``/``%load_ext`` load, the sampler runs,
a recording goes on. All in real kernels."""

from __future__ import annotations

import ast
import sqlite3

from traitlets.config import Config

from nbgpumon._session.config import GPUMon
from nbgpumon._session.facts.settings import SettingRefused
from nbgpumon._views.status.settings import refused_line

from notebook_runner import run_cells

# one value each setting refuses: a wrong type, a value out of range, or one it cannot start
BAD = {
    "device_source": "nope",
    "interval": 0,
    "allocator_interval": 1e9,
    "detail_interval": -1,
    "slow_interval": "often",
    "process_interval": "often",
    "idle_interval": 0.001,
    "peak_mode": "x",
    "summary": "maybe",
    "history": 0,
    "leak_threshold": -1,
    "record_path": "/proc/no/such/dir/run.sqlite",
    "record_raw_seconds": -5,
    "nvtx": "x",
    "oom_report": "x",
    "cupy_peak_hook": "x",
    "prometheus_url": "nope",
    "prometheus_match": 5,
    "cluster_interval": 0.5,
    "cluster_host_label": 5,
    "cluster_timeout": 0,
    "export_port": 70000,
    "export_host": 5,
}

STATE = (
    "import nbgpumon, time\n"
    "m = nbgpumon.monitor()\n"
    "deadline = time.monotonic() + 30\n"
    "while m._session.sampler.ticks < 2 and time.monotonic() < deadline:\n"
    "    time.sleep(0.01)\n"
    "c = m.config\n"
    "print('STATE', m._session.sampler.running, m._session.sampler.ticks >= 2, repr(m.recording))\n"
    "print('SETTINGS', {n: getattr(c, n) for n in c.trait_names(config=True)})\n"
    "print('SHELL', dict(get_ipython().config.get('GPUMon', {})))"
)

CONFIGURABLES = (
    "_kinds = [type(c).__name__ for c in get_ipython().configurables]\n"
    "print('CONFIGURABLES', _kinds.count('GPUMon'), _kinds.count('GPUMonMagics'))"
)


def _lines(run) -> list[str]:
    return [line for line in run.text.strip().splitlines() if line.strip()]


def _state(run) -> tuple[str, dict, dict]:
    found = {line.split(" ", 1)[0]: line.split(" ", 1)[1] for line in _lines(run)}
    return found["STATE"], ast.literal_eval(found["SETTINGS"]), ast.literal_eval(found["SHELL"])


def test_every_setting_has_a_refused_value_here():
    assert set(BAD) == set(GPUMon.class_trait_names(config=True))


def test_refused_live_values_never_break_a_reload_and_the_recording_goes_on(tmp_path):
    path = tmp_path / "run.sqlite"
    refusals = [f"%config GPUMon.{name} = {value!r}" for name, value in BAD.items()]
    runs = run_cells(
        [
            "%load_ext nbgpumon",
            f"%gpumon record {path}",
            STATE,
            *refusals,
            STATE,
            "%reload_ext nbgpumon",
            STATE,
            "x = 1",
            "%unload_ext nbgpumon",
            "%load_ext nbgpumon",
            STATE,
            "y = 2",
            CONFIGURABLES,
        ],
        cwd=tmp_path,
    )
    before = _state(runs[2])
    first = 3
    for name, run in zip(BAD, runs[first : first + len(BAD)], strict=True):
        lines = _lines(run)
        assert len(lines) == 1, (name, lines)
        assert lines[0].startswith("nbgpumon: ") and f"GPUMon.{name} stays" in lines[0], lines
        assert "Traceback" not in run.text
    after = _state(runs[first + len(BAD)])
    assert after == before  # every setting as it was, and none of the values in the shell
    assert "recording to" in before[0] and before[0].startswith("True True")

    reload, state_reloaded = runs[first + len(BAD) + 1], runs[first + len(BAD) + 2]
    assert "Traceback" not in reload.text
    lines = _lines(reload)
    assert "watching" in lines[0] or "no GPU" in lines[0], lines
    assert lines[1:] == [f"nbgpumon: recording to {path} (session 2)"], lines
    state, settings, shell = _state(state_reloaded)
    assert state.startswith("True True") and str(path) in state
    assert settings == before[1]  # the reload goes on with the live settings
    assert shell == before[2] == {}  # and the shell's configuration is what the user set

    assert runs[-1].text.split() == ["CONFIGURABLES", "1", "1"]  # none left by the reloads
    load, state_loaded = runs[-4], runs[-3]
    assert "Traceback" not in load.text
    assert _lines(load)[1:] == [f"nbgpumon: recording to {path} (session 3)"]
    assert _state(state_loaded)[0].startswith("True True")

    with sqlite3.connect(path) as db:  # nothing recorded was lost across the loads
        sessions = db.execute("SELECT COUNT(*) FROM session").fetchone()[0]
        labels = [row[0] for row in db.execute("SELECT label FROM cells WHERE session = 2")]
    assert sessions == 3
    assert "x = 1" in labels


def _config_file_text() -> str:
    return "".join(f"c.GPUMon.{name} = {value!r}\n" for name, value in BAD.items())


def test_a_config_file_with_refused_values_loads_with_a_line_each(tmp_path):
    profile = tmp_path / "ipython" / "profile_default"
    profile.mkdir(parents=True)
    (profile / "ipython_config.py").write_text(_config_file_text())
    runs = run_cells(
        ["%load_ext nbgpumon", STATE, "%reload_ext nbgpumon", "%unload_ext nbgpumon"],
        env={"IPYTHONDIR": str(tmp_path / "ipython")},
        cwd=tmp_path,
    )
    load = runs[0]
    assert "Traceback" not in load.text
    lines = _lines(load)
    assert "watching" in lines[0] or "no GPU" in lines[0]
    named = lines[1:]
    assert len(named) == len(BAD), named
    for name in BAD:
        matching = [line for line in named if f"'{name}'" in line or f"GPUMon.{name} " in line]
        assert len(matching) == 1, (name, named)
    defaults = {name: GPUMon.class_traits()[name].default() for name in BAD}
    state, settings, shell = _state(runs[1])
    assert state.startswith("True True")
    assert settings == defaults
    assert shell == {}  # every refused value was taken out of the shell's configuration
    # so the reload meets none of them again: the loaded line alone
    assert len(_lines(runs[2])) == 1 and "Traceback" not in runs[2].text
    assert runs[3].text.strip() == ""


def test_update_config_applies_the_good_values_of_one_config_and_names_the_bad_one(capsys):
    config = GPUMon()
    told: list[SettingRefused] = []
    config.tell = told.append  # (the monitor prints it: the kernel tests below)
    given = Config({"GPUMon": {"interval": 0.5, "peak_mode": "x", "history": 20}})
    config.update_config(given)
    assert (config.interval, config.peak_mode, config.history) == (0.5, "reset", 20)
    assert "peak_mode" not in given["GPUMon"]  # so whoever merges it next never holds it
    assert [(f.name, f.kept) for f in told] == [("peak_mode", "reset")]
    assert refused_line(told[0]).endswith("GPUMon.peak_mode stays 'reset'")
    assert capsys.readouterr().out == ""  # the settings themselves print nothing


def test_unknown_names_get_one_line_each_and_never_reach_the_shell(tmp_path):
    profile = tmp_path / "ipython" / "profile_default"
    profile.mkdir(parents=True)
    (profile / "ipython_config.py").write_text("c.GPUMon.intervall = 0.5\nc.GPUMon.history = 20\n")
    runs = run_cells(
        ["%load_ext nbgpumon", "%config GPUMon.zzz = 1", STATE, "%reload_ext nbgpumon", STATE],
        env={"IPYTHONDIR": str(tmp_path / "ipython")},
        cwd=tmp_path,
    )
    everything = "".join(run.text for run in runs)
    assert "not recognized" not in everything and "Traceback" not in everything
    assert _lines(runs[0])[1:] == [
        "nbgpumon: GPUMon.intervall is not a setting (did you mean GPUMon.interval?); it is ignored"
    ]
    assert _lines(runs[1]) == [
        "nbgpumon: GPUMon.zzz is not a setting (%config GPUMon lists them); nothing was changed"
    ]
    for state in (runs[2], runs[4]):
        running, settings, shell = _state(state)
        assert running.startswith("True True")
        assert settings["history"] == 20 and settings["interval"] == 0.1
        assert shell == {"history": 20}  # the configured value, and nothing unknown
    assert len(_lines(runs[3])) == 1  # the reload meets neither name again: its loaded line
