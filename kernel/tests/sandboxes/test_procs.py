import os

from agent_env.sandboxes import leases
from agent_env.sandboxes.procs import ProcessIdentity


def test_current_process_is_alive():
    assert ProcessIdentity.current().alive()


def test_reused_pid_with_another_start_time_is_not_alive():
    me = ProcessIdentity.current()
    assert me.start_time is not None  # Linux /proc
    reused = ProcessIdentity(pid=me.pid, start_time=me.start_time + 1, host=me.host)
    assert not reused.alive()
    assert not leases.owner_alive(
        {"owner_pid": reused.pid, "owner_start_time": reused.start_time, "host": reused.host}
    )


def test_owner_on_another_host_is_not_ours_to_judge():
    other = ProcessIdentity(pid=os.getpid(), start_time=1, host="elsewhere.invalid")
    assert other.alive()


def test_label_forms_round_trip():
    me = ProcessIdentity.current()
    assert ProcessIdentity.from_labels(me.to_labels()) == me
    assert ProcessIdentity.from_label_value(me.to_label_value()) == me
    unknown = ProcessIdentity(pid=12, start_time=None, host="h")
    assert unknown.to_label_value() == "12:@h"
    assert ProcessIdentity.from_label_value("12:@h") == unknown
    assert ProcessIdentity.from_label_value("garbage") is None
    assert ProcessIdentity.from_labels({}) is None
