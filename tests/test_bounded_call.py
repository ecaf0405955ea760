"""The worker that makes the main thread's driver calls: each caller gets its own answer or
none (never another caller's), a busy worker refuses at once, and what must not run under a
call (the driver's shutdown) runs after it, on the worker."""

from __future__ import annotations

import threading
import time

from nbgpumon._sampling.bounded_call import NO_ANSWER, BoundedCall


def test_two_threads_asking_at_once_never_get_each_others_answer():
    call = BoundedCall("test-bounded-call")
    got: dict[str, list] = {"a": [], "b": []}

    def ask(name: str) -> None:
        for i in range(300):
            answer = call.call(lambda i=i: (name, i), 5.0)
            got[name].append((answer, i))

    threads = [threading.Thread(target=ask, args=(name,)) for name in got]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    call.close()
    answered = [(name, a, i) for name, answers in got.items() for a, i in answers]
    answered = [(name, a, i) for name, a, i in answered if a is not NO_ANSWER]
    assert len(answered) >= 100  # (a call refused while the other thread's runs gets none)
    assert all(a == (name, i) for name, a, i in answered)  # each its own


def test_a_busy_worker_refuses_and_a_callback_waits_for_the_call_to_return():
    call = BoundedCall("test-bounded-call")
    release, order = threading.Event(), []

    def stuck() -> str:
        release.wait(10)
        order.append("call returned")
        return "late"

    started = time.monotonic()
    assert call.call(stuck, 0.05) is NO_ANSWER  # past its deadline: the caller goes on
    assert call.call(lambda: "next", 1.0) is NO_ANSWER  # refused at once while it is busy
    assert time.monotonic() - started < 1.0
    call.when_idle(lambda: order.append(("callback", threading.current_thread().name)))
    assert order == []  # not under the call
    release.set()
    deadline = time.monotonic() + 10
    while len(order) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert order == ["call returned", ("callback", "test-bounded-call")]
    assert call.call(lambda: "next", 1.0) == "next"
    ran_now = []
    call.when_idle(lambda: ran_now.append(threading.current_thread().name))
    assert ran_now == [threading.current_thread().name]  # idle: at once, on the caller's thread
    call.close()
