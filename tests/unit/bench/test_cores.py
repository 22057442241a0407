import os
import subprocess
import sys

from server.bench.cores import cores_apart, placed


def test_the_server_gets_cores_of_its_own_and_the_clients_the_rest():
    mine = os.sched_getaffinity(0)
    if len(mine) < 2:  # nothing to set apart: the server shares the one core
        with cores_apart() as (server, said):
            assert server is None and os.sched_getaffinity(0) == mine
        return
    with cores_apart() as (server, said):
        clients = os.sched_getaffinity(0)
        assert server and clients and not server & clients
        assert server | clients == mine
        assert f"{len(server)} of {len(mine)} cores" in said
        # a process started for the server runs where it was placed
        child = subprocess.run(
            [sys.executable, "-c", "import os; print(sorted(os.sched_getaffinity(0)))"],
            preexec_fn=lambda: placed(0, server),
            capture_output=True,
            text=True,
            check=True,
        )
        assert child.stdout.strip() == str(sorted(server))
    assert os.sched_getaffinity(0) == mine  # given back
