"""The kernel's answer to the browser's ``resend`` request (docs/widget-protocol.md): exactly
the rows asked for, sent again as one ``samples`` message marked ``fill``; a request that is
malformed or asks for rows never sent gets nothing."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest

from nbgpumon._api.monitor import Monitor

from notebook_runner import fake_pynvml
from packed_history import assert_history_holds


@pytest.fixture
def sent_widget():
    """A monitor with at least 12 rows, all sent, its sampler stopped; what the widget sends
    next is kept in the list returned with it."""
    mon = Monitor(nvml_module=fake_pynvml())
    try:
        mon.start()
        deadline = time.monotonic() + 30
        while mon.data.cursor < 12 and time.monotonic() < deadline:
            time.sleep(0.02)
        mon.stop()
        assert mon.data.cursor >= 12
        widget = mon.widget()
        publisher = mon._publisher
        publisher.send_new()
        sent: list[tuple[dict, list]] = []
        widget.send = lambda content, buffers=None: sent.append((content, buffers))
        yield mon, widget, sent
    finally:
        mon.close()


def _sent_rows(sent: list[tuple[dict, list]]) -> list[dict]:
    """The rows of the one ``cells`` message sent: its buffers' JSON, as many as it says."""
    [(header, buffers)] = [(h, b) for h, b in sent if h.get("type") == "cells"]
    rows = [row for b in buffers for row in json.loads(bytes(b).decode())]
    assert header["count"] == len(rows)
    return rows


def test_a_resend_request_gets_the_rows_asked_for_as_one_fill_message(sent_widget):
    mon, widget, sent = sent_widget
    widget._handle_custom_msg({"type": "resend", "from": 3, "to": 9}, [])
    [(header, buffers)] = sent
    assert header["type"] == "samples" and header["fill"] is True
    assert (header["start"], header["rows"], header["gap"]) == (3, 6, False)
    times = np.frombuffer(buffers[0], "<f8")
    assert list(times) == list(mon.data.since(3, 6).times)
    assert mon._publisher.resent_rows == 6


def test_after_a_cell_the_main_thread_says_where_the_stream_is_even_with_no_new_rows(
    sent_widget,
):
    # The sampler's thread sent every row (into a front end that drops them all, as Colab's
    # does): the main thread's message after the cell still comes, reaching the cursor (the
    # newest row sent again), so that such a front end sees the rows it lacks and asks for them.
    mon, _widget, sent = sent_widget
    mon._publisher.main_thread_sends = True  # (what a kernel in Colab's runtime gets)
    mon._publisher.ledger_changed()
    samples = [(h, b) for h, b in sent if h.get("type") == "samples"]
    [(header, _buffers)] = samples
    assert header["after_cell"] is True
    assert header["start"] + header["rows"] == mon.data.cursor and header["rows"] >= 1


@pytest.mark.parametrize(
    "request_",
    [
        {"type": "resend", "from": 3},  # no end
        {"type": "resend", "from": "3", "to": 9},  # not a cursor
        {"type": "resend", "from": 9, "to": 3},  # backwards
        {"type": "resend", "from": -1, "to": 3},
        {"type": "resend", "from": 3, "to": 10**9},  # rows never sent
        {"type": "history", "from": 3, "to": 9},  # no such request
        ["resend", 3, 9],
    ],
)
def test_a_request_that_is_malformed_or_asks_for_rows_never_sent_gets_nothing(
    sent_widget, request_
):
    mon, widget, sent = sent_widget
    widget._handle_custom_msg(request_, [])
    assert sent == []
    assert mon._publisher.resent_rows == 0


def test_a_page_asking_for_the_whole_state_gets_the_history_packed_now(sent_widget):
    """A page that connects late, or again, starts where the stream is: the snapshot the
    trait holds may be minutes old on an idle kernel, older than a resend could still give."""
    mon, widget, _sent = sent_widget
    widget.history_cursor = 3  # as if packed long ago
    state = widget.get_state()
    assert state["history_cursor"] == mon.data.cursor
    rows, width = np.frombuffer(state["history"][:8], "<u4")
    data = mon.data  # every row so far, downsampled to none:
    assert (rows, width) == (data.cursor, len(data.columns))
    assert_history_holds(state["history"], mon.timeline.window())  # the numbers too
    assert widget.get_state("history_cursor") == {"history_cursor": 3}  # a trait's own update


def test_after_a_cell_the_main_thread_sends_the_newest_row_even_if_the_sampler_just_did(
    sent_widget,
):
    """A front end that drops the sampler thread's messages hears of a cell only from this one:
    it must never be empty, or that front end would not know what it missed."""
    mon, _widget, sent = sent_widget
    mon._publisher.send_new()
    assert sent == []  # everything was sent already: the sampler's ticks send nothing
    mon._publisher.send_new(after_cell=True)
    [(header, buffers)] = sent
    assert (header["start"], header["rows"], header["after_cell"]) == (mon.data.cursor - 1, 1, True)
    assert list(np.frombuffer(buffers[0], "<f8")) == list(mon.data.since(mon.data.cursor - 1).times)


def test_a_cell_s_start_and_end_send_nothing_from_the_main_thread_the_next_tick_sends_them(
    sent_widget,
):
    """Issue 43: with the chart shown, a cell's start and end cost the main thread two flags;
    the sampler's thread sends the running cell, the new row and the marks at its next tick
    (the thread is stopped here: the test makes the tick's call itself)."""
    mon, widget, sent = sent_widget
    publisher = mon._publisher
    assert publisher.main_thread_sends is False  # (no google.colab in this process)
    opened = mon._session.ledger.begin("cell", "x = 1", 7)
    publisher.running_changed()
    assert sent == []
    publisher(mon.data.cursor)  # the sampler's next tick
    assert widget.running["count"] == 7
    record = mon._session.ledger.end(opened, execution_count=7)
    mon._session.cells_pipeline.store(record)  # (the monitor's listener: ledger_changed)
    mon.mark("done")
    assert [h for h, _ in sent if h.get("type") == "cells"] == []
    deadline = time.monotonic() + 30  # (a tick sends at most every SEND_EVERY)
    while not [h for h, _ in sent if h.get("type") == "cells"] and time.monotonic() < deadline:
        publisher(mon.data.cursor)
        time.sleep(0.02)
    assert [row["count"] for row in _sent_rows(sent)] == [7]
    assert widget.running == {}
    assert [m["label"] for m in widget.marks] == ["done"]


def test_rows_are_made_at_each_tick_and_sent_once_in_order_with_the_next_samples(sent_widget):
    """Issue 43: the sampler's thread makes the new records' rows at every tick, a tick's cells
    at a time (short holds of the GIL when cells run back to back, not half a second's rows in
    one), and sends all it made, in order and once, with its next samples message."""
    mon, widget, sent = sent_widget
    publisher, ledger = mon._publisher, mon._session.ledger
    publisher._next_send = time.monotonic() + 3600  # (no send due: the ticks only make rows)
    for count in (1, 2, 3):
        record = ledger.end(ledger.begin("cell", f"x = {count}", count), execution_count=count)
        mon._session.cells_pipeline.store(record)
        publisher(mon.data.cursor)  # a tick
        assert [row["count"] for row in publisher._rows] == list(range(1, count + 1))
    assert [h for h, _ in sent if h.get("type") == "cells"] == []
    publisher._next_send = 0.0
    publisher(mon.data.cursor)  # the tick that sends
    publisher(mon.data.cursor)  # (and one more: nothing twice)
    assert [row["count"] for row in _sent_rows(sent)] == [1, 2, 3]
    assert [row["count"] for row in widget.cells[-3:]] == [1, 2, 3]
    assert publisher._rows == []


def test_a_tick_s_many_rows_are_made_a_few_at_a_time_with_the_gil_given_up_between(
    sent_widget, monkeypatch
):
    """Issue 43: Run All's cells of one tick (fifty on a fast host) are made into rows
    ROWS_AT_ONCE at a time, the GIL given up between, so that a cell starting meanwhile
    waits for a few rows, not all of them; every row is still made in that tick, in order."""
    from nbgpumon._views.widget import live_chart

    mon, _widget, _sent = sent_widget
    publisher, ledger = mon._publisher, mon._session.ledger
    publisher._next_send = time.monotonic() + 3600  # (no send due: the tick only makes rows)
    made_before_each_give_way: list[int] = []
    monkeypatch.setattr(
        live_chart, "give_way", lambda: made_before_each_give_way.append(len(publisher._rows))
    )
    cells = 2 * live_chart.ROWS_AT_ONCE + 3
    for count in range(1, cells + 1):
        record = ledger.end(ledger.begin("cell", f"x = {count}", count), execution_count=count)
        mon._session.cells_pipeline.store(record)
    publisher(mon.data.cursor)  # one tick
    assert [row["count"] for row in publisher._rows] == list(range(1, cells + 1))
    at_once = live_chart.ROWS_AT_ONCE
    assert made_before_each_give_way == [0, at_once, 2 * at_once]


def test_a_page_that_hears_no_thread_asks_for_the_main_thread_and_is_caught_up_at_once(
    sent_widget,
):
    """``main_thread`` (docs/widget-protocol.md): the page heard none of the sampler thread's
    messages. The main thread sends a cell's changes from then on, and the samples so far now,
    marked after_cell, so that the page asks for the rows it missed."""
    mon, widget, sent = sent_widget
    widget._handle_custom_msg({"type": "main_thread"}, [])
    assert mon._publisher.main_thread_sends is True
    [(header, _)] = [(h, b) for h, b in sent if h.get("type") == "samples"]
    assert header["after_cell"] is True and header["start"] + header["rows"] == mon.data.cursor
    sent.clear()
    widget._handle_custom_msg({"type": "main_thread"}, [])  # (asked again: nothing more)
    assert sent == []
    opened = mon._session.ledger.begin("cell", "x = 1", 3)
    mon._session.cells_pipeline.store(mon._session.ledger.end(opened, execution_count=3))
    assert [row["count"] for row in _sent_rows(sent)] == [3]  # sent by the main thread now


def test_a_recordings_widget_ignores_a_request_for_the_main_thread(tmp_path):
    import nbgpumon

    mon = Monitor(nvml_module=fake_pynvml())
    try:
        mon.start()
        assert mon.wait_for_samples()
        mon.record(str(tmp_path / "run.sqlite"))
        mon.mark("m")
        mon.record(None)
    finally:
        mon.close()
    widget = nbgpumon.load(tmp_path / "run.sqlite").widget()
    sent: list = []
    widget.send = lambda content, buffers=None: sent.append(content)
    widget._handle_custom_msg({"type": "main_thread"}, [])
    assert sent == []


def test_a_sampler_quiet_for_its_idle_interval_is_not_taken_for_stalled():
    mon = Monitor(nvml_module=fake_pynvml())
    try:
        mon.config.idle_interval = 5.0
        mon.widget()
        publisher = mon._publisher
        publisher._publish_status()  # (what a tick does every few seconds)
        # a tick 4 s ago is a quiet sampler's, not a stalled one's: cells' edges publish
        # nothing from the main thread
        publisher._ticked = time.monotonic() - 4.0
        assert not publisher.main_thread_now()
        publisher._ticked = time.monotonic() - 11.0
        assert publisher.main_thread_now()
    finally:
        mon.close()
